// Preloaded (`node --require`) into a service process of the integration cluster, whose processes are
// configured by environment only: while the file DATA_DIR/fail-writes exists, writes to the files of
// DATA_DIR/db fail with the code it holds (ENOSPC when empty), as a full or failing disk's do, through
// fs's documented writeSync (what the embedded store's group commit writes with) and fs.promises.appendFile
// (NeDB's own appends, with the group commit forced off). Removing the file
// frees the disk. The same stand-in as test/support/failing-writes.ts, for another process.
const fs = require("node:fs");
const path = require("node:path");

const dataDir = process.env.DATA_DIR;
const trigger = path.join(dataDir, "fail-writes");
const dbDir = path.join(dataDir, "db");
const ERRNO = {
  ENOSPC: [-28, "no space left on device"],
  EIO: [-5, "i/o error"],
  EROFS: [-30, "read-only file system"],
};
const real = fs.writeSync;

/** The code writes fail with now, or null while the disk works. */
function failingWith() {
  try {
    return fs.readFileSync(trigger, "utf8").trim() || "ENOSPC";
  } catch {
    return null;
  }
}

function opensStoreFile(fd) {
  let st;
  try {
    st = fs.fstatSync(fd);
  } catch {
    return false;
  }
  if (!fs.existsSync(dbDir)) return false;
  return fs.readdirSync(dbDir).some((name) => {
    const other = fs.statSync(path.join(dbDir, name), { throwIfNoEntry: false });
    return !!other && other.ino === st.ino && other.dev === st.dev;
  });
}

function writeError(code) {
  const [errno, text] = ERRNO[code] || [-5, code.toLowerCase()];
  return Object.assign(new Error(`${code}: ${text}, write`), { code, errno, syscall: "write" });
}

fs.writeSync = function writeSync(fd, ...rest) {
  const code = failingWith();
  if (code && opensStoreFile(fd)) throw writeError(code);
  return real.call(fs, fd, ...rest);
};

// NeDB's own appends, when the group commit is forced off (INTERNALS_HOOKS_OFF): it takes
// fs.promises.appendFile when it is loaded, after this preload.
const realAppend = fs.promises.appendFile;
fs.promises.appendFile = async function appendFile(file, ...rest) {
  const code = failingWith();
  if (code && typeof file === "string" && path.dirname(path.resolve(file)) === path.resolve(dbDir)) {
    throw writeError(code);
  }
  return realAppend.call(fs.promises, file, ...rest);
};
