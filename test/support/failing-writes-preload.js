// Preloaded (`node --require`) into a service process of the integration cluster, whose processes are
// configured by environment only: while the file DATA_DIR/fail-writes exists, writes to the files of
// DATA_DIR/db fail with the code it holds (ENOSPC when empty), as a full or failing disk's do, through
// the two fs functions NeDB writes its files with, `fs.promises.appendFile` (each write's lines) and
// `fs.createWriteStream` (a file written anew when NeDB loads it); NeDB takes both when it is loaded,
// after this preload. Removing the file frees the disk. The same stand-in as
// test/support/failing-writes.ts, for another process.
const fs = require("node:fs");
const path = require("node:path");

const dataDir = process.env.DATA_DIR;
const trigger = path.join(dataDir, "fail-writes");
const dbDir = path.resolve(dataDir, "db");
const ERRNO = {
  ENOSPC: [-28, "no space left on device"],
  EIO: [-5, "i/o error"],
  EROFS: [-30, "read-only file system"],
};

/** The code writes to `file` fail with now, or null while the disk works or it is not a store file. */
function failingWith(file) {
  if (typeof file !== "string" || path.dirname(path.resolve(file)) !== dbDir) return null;
  try {
    return fs.readFileSync(trigger, "utf8").trim() || "ENOSPC";
  } catch {
    return null;
  }
}

function writeError(code) {
  const [errno, text] = ERRNO[code] || [-5, code.toLowerCase()];
  return Object.assign(new Error(`${code}: ${text}, write`), { code, errno, syscall: "write" });
}

const realAppend = fs.promises.appendFile;
fs.promises.appendFile = async function appendFile(file, ...rest) {
  const code = failingWith(file);
  if (code) throw writeError(code);
  return realAppend.call(fs.promises, file, ...rest);
};

const realStream = fs.createWriteStream;
fs.createWriteStream = function createWriteStream(file, ...rest) {
  const stream = realStream.call(fs, file, ...rest);
  const code = failingWith(file);
  if (code) process.nextTick(() => stream.destroy(writeError(code)));
  return stream;
};
