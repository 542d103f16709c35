/**
 * A disk that fails: writes to the files of one folder fail with a file system error (ENOSPC for a
 * full disk, EIO, EROFS…), as the kernel reports them, through the two fs functions NeDB writes its
 * files with: `fs.promises.appendFile` (each write's lines) and `fs.createWriteStream` (a file written
 * anew, when NeDB loads it). Files elsewhere (logs, other tests' folders) are written as usual. No small
 * file system can be mounted here without root, so this stands in for one.
 *
 * NeDB keeps its own reference to both functions from when it is loaded, so the stand-ins are put in
 * place when this module is imported: import it before the store (shared/storage) is loaded. They stay
 * for the worker's life (Node's fs is shared by its test files), passing writes through while no
 * folder fails.
 */
import fs from "node:fs";
import path from "node:path";

const MESSAGES: Record<string, [number, string]> = {
  ENOSPC: [-28, "no space left on device"],
  EIO: [-5, "i/o error"],
  EROFS: [-30, "read-only file system"],
  EDQUOT: [-122, "disk quota exceeded"],
};

/** An error as a failed `write` system call is reported for `code`. */
export function writeError(code: string): NodeJS.ErrnoException {
  const [errno, text] = MESSAGES[code] ?? [-5, code.toLowerCase()];
  return Object.assign(new Error(`${code}: ${text}, write`), { code, errno, syscall: "write" });
}

export interface FailingWrites {
  /** Writes to the folder's files that failed so far. */
  readonly failures: number;
  /** The disk works again. */
  restore(): void;
}

interface Failing {
  code: string;
  partial: boolean;
  failures: number;
}

/** The failing folders, kept on fs itself: each test file loads this module anew, fs stays. */
const FOLDERS = Symbol.for("rounds.test.failing-writes");
type Patched = typeof fs & { [FOLDERS]?: Map<string, Failing> };

function install(): Map<string, Failing> {
  const patched = fs as Patched;
  const existing = patched[FOLDERS];
  if (existing) return existing;
  const folders = new Map<string, Failing>();
  patched[FOLDERS] = folders;
  const failingFor = (file: unknown): Failing | undefined =>
    typeof file === "string" ? folders.get(path.dirname(path.resolve(file))) : undefined;

  const realAppend = fs.promises.appendFile;
  fs.promises.appendFile = async function appendFile(file, data, options) {
    const failing = failingFor(file);
    if (!failing) return realAppend.call(fs.promises, file, data, options);
    if (failing.partial && typeof data === "string") {
      // Half of it reaches the file before the disk is full, as a write cut short does.
      failing.partial = false;
      await realAppend.call(fs.promises, file, data.slice(0, Math.max(1, data.length >> 1)), options);
    }
    failing.failures++;
    throw writeError(failing.code);
  } as typeof fs.promises.appendFile;

  const realStream = fs.createWriteStream;
  fs.createWriteStream = function createWriteStream(file, options) {
    const stream = realStream.call(fs, file, options);
    const failing = failingFor(file);
    if (failing) {
      failing.failures++;
      process.nextTick(() => stream.destroy(writeError(failing.code)));
    }
    return stream;
  } as typeof fs.createWriteStream;
  return folders;
}

const folders = install();

/**
 * From now on, writes to the files of `dir` fail with `code`. With `partialFirst`, the first append puts
 * half of its bytes in the file before it fails, as a disk filling up mid-write does.
 */
export function failWritesIn(
  dir: string,
  code = "ENOSPC",
  opts: { partialFirst?: boolean } = {},
): FailingWrites {
  const key = path.resolve(dir);
  const failing: Failing = { code, partial: opts.partialFirst ?? false, failures: 0 };
  folders.set(key, failing);
  return {
    get failures() {
      return failing.failures;
    },
    restore: () => void (folders.get(key) === failing && folders.delete(key)),
  };
}
