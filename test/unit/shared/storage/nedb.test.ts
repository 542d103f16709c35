import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { acquireLock, lockHolder, releaseLock } from "../../../../shared/storage/nedb";

describe("lockHolder", () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "nedb-lock-"));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const lockWith = (content: string) => fs.writeFileSync(path.join(dir, ".lock"), content);

  it("when nobody locked the folder, then there is no holder", () => {
    expect(lockHolder(dir)).toBeNull();
  });

  it("when another live process holds the folder, then it is named", () => {
    lockWith(String(process.ppid));
    expect(lockHolder(dir)).toBe(process.ppid);
  });

  it("when the lock is this process's own, then it is no other holder", () => {
    acquireLock(dir);
    try {
      expect(lockHolder(dir)).toBeNull();
    } finally {
      releaseLock(dir);
    }
  });

  it("when the lock names a process that is gone or is not a process id, then it is stale: no holder", () => {
    lockWith("2147483646");
    expect(lockHolder(dir)).toBeNull();
    lockWith("not-a-pid");
    expect(lockHolder(dir)).toBeNull();
  });
});
