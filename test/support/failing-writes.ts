/**
 * A disk that fails: writes to the files of one folder fail with a file system error (ENOSPC for a
 * full disk, EIO, EROFS…), as the kernel reports them, through fs's documented `writeSync`, which the
 * embedded store's group commit writes with. Files elsewhere (logs, other tests' folders) are written
 * as usual. No small file system can be mounted here without root, so this stands in for one.
 */
import fs from "node:fs";
import path from "node:path";

const MESSAGES: Record<string, [number, string]> = {
  ENOSPC: [-28, "no space left on device"],
  EIO: [-5, "i/o error"],
  EROFS: [-30, "read-only file system"],
  EDQUOT: [-122, "disk quota exceeded"],
};

/** An error as `fs.writeSync` throws it for `code`. */
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

/** Whether `fd` is open on a file that is in `dir` now. */
function opensFileIn(dir: string, fd: number): boolean {
  let st: fs.Stats;
  try {
    st = fs.fstatSync(fd);
  } catch {
    return false;
  }
  for (const name of fs.readdirSync(dir)) {
    const other = fs.statSync(path.join(dir, name), { throwIfNoEntry: false });
    if (other && other.ino === st.ino && other.dev === st.dev) return true;
  }
  return false;
}

/**
 * From now on, writes to the files of `dir` fail with `code`. With `partialFirst`, the first one puts
 * half of its bytes in the file before the next call fails, as a disk filling up mid-write does.
 */
export function failWritesIn(
  dir: string,
  code = "ENOSPC",
  opts: { partialFirst?: boolean } = {},
): FailingWrites {
  const real = fs.writeSync;
  let partial = opts.partialFirst ?? false;
  let failures = 0;
  const spy = jest.spyOn(fs, "writeSync").mockImplementation(((fd: number, ...rest: unknown[]) => {
    if (!opensFileIn(dir, fd)) return (real as (...a: unknown[]) => number)(fd, ...rest);
    const [buffer, offset, length] = rest as [Buffer, number | undefined, number | undefined];
    if (partial && Buffer.isBuffer(buffer)) {
      partial = false;
      const start = offset ?? 0;
      const half = Math.max(1, Math.floor((length ?? buffer.length - start) / 2));
      return real(fd, buffer, start, half);
    }
    failures++;
    throw writeError(code);
  }) as typeof fs.writeSync);
  return {
    get failures() {
      return failures;
    },
    restore: () => spy.mockRestore(),
  };
}
