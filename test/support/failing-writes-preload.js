// Preloaded (`node --require`) into a service process of the integration cluster, whose processes are
// configured by environment only: while the file DATA_DIR/fail-writes exists, writes to the files of
// DATA_DIR/db fail with the code it holds (ENOSPC when empty), as a full or failing disk's do, through
// fs's documented writeSync (what the embedded store's group commit writes with). Removing the file
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

fs.writeSync = function writeSync(fd, ...rest) {
  const code = failingWith();
  if (code && opensStoreFile(fd)) {
    const [errno, text] = ERRNO[code] || [-5, code.toLowerCase()];
    throw Object.assign(new Error(`${code}: ${text}, write`), { code, errno, syscall: "write" });
  }
  return real.call(fs, fd, ...rest);
};
