/**
 * What only the on-disk NeDB engine promises: data outlives the store, a folder belongs to one process
 * at a time (a lock file holding the owner's pid; a dead owner's lock is taken over), and a write the
 * disk refuses fails every operation that depended on it, leaving memory and file as they were.
 */
// First: the failing disk's stand-ins must be in place before NeDB is loaded (see the module).
import { failWritesIn, writeError } from "../support/failing-writes";
import { execFile, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { NedbStore } from "../../shared/storage";
import { UsersRepository } from "../../services/users/users.repository";

interface Doc {
  _id: string;
  n: number;
  at: Date;
  tags: string[];
}

const root = fs.mkdtempSync(path.join(os.tmpdir(), "storage-nedb-disk-"));
let dirs = 0;
const freshDir = (): string => path.join(root, `db-${++dirs}`);
const lockOf = (dir: string): string => path.join(dir, ".lock");

const open = new Set<NedbStore>();
const openStore = (dir: string): NedbStore => {
  const store = new NedbStore(dir);
  open.add(store);
  return store;
};
const closeStore = async (store: NedbStore): Promise<void> => {
  open.delete(store);
  await store.close();
};

let sleeper: ChildProcess | undefined;

/** The pid of a process that has exited (and that nothing else holds). */
const deadPid = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", () => resolve(child.pid as number));
  });

/** Runs a writer script in its own process and kills it (-9) as soon as it prints "written". */
async function killedOnceWritten(script: string): Promise<void> {
  const child = spawn(process.execPath, ["--require", "tsx/cjs", "-e", script], {
    cwd: path.resolve(__dirname, "../.."),
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (b: Buffer) => b.toString().includes("written") && resolve());
    child.once("exit", (code) => reject(new Error(`writer exited early (${code})`)));
  });
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGKILL");
  await exited;
}

afterAll(async () => {
  for (const store of [...open]) await closeStore(store);
  if (sleeper && sleeper.exitCode === null && sleeper.signalCode === null) sleeper.kill();
  fs.rmSync(root, { recursive: true, force: true });
});

describe("NeDB on disk", () => {
  it("when data is written, the store closed and reopened on the same dir, then the data is still there", async () => {
    const dir = freshDir();
    const at = new Date("2030-08-09T10:11:12.013Z");

    const first = openStore(dir);
    const docs = first.collection<Doc>("things");
    await docs.insertMany([
      { _id: "a", n: 1, at, tags: ["x"] },
      { _id: "b", n: 2, at, tags: ["y"] },
      { _id: "c", n: 3, at, tags: ["z"] },
    ]);
    await docs.updateOne({ _id: "a" }, { $inc: { n: 10 } });
    await docs.deleteOne({ _id: "c" });
    const users = new UsersRepository(first);
    await users.init();
    const user = await users.create({ phone: "+71111111111", username: "keeper" }, at);
    await closeStore(first);
    expect(fs.existsSync(lockOf(dir))).toBe(false);

    const second = openStore(dir);
    const again = second.collection<Doc>("things");
    expect(await again.find({}, { sort: { _id: 1 } })).toEqual([
      { _id: "a", n: 11, at, tags: ["x"] },
      { _id: "b", n: 2, at, tags: ["y"] },
    ]);
    expect((await again.findOne({ _id: "b" }))?.at).toBeInstanceOf(Date);
    const reopenedUsers = new UsersRepository(second);
    await reopenedUsers.init();
    expect(await reopenedUsers.findById(user!._id)).toEqual(user);
    // The unique index on phone holds for the documents loaded from disk.
    await expect(reopenedUsers.create({ phone: "+71111111111", username: "copy" }, at)).resolves.toBeNull();
    await closeStore(second);
  });

  it("when a process is killed (-9) right after its writes, then the next store on the folder finds every write", async () => {
    const dir = freshDir();
    const script = `
      const { NedbStore } = require("./shared/storage");
      (async () => {
        const docs = new NedbStore(${JSON.stringify(dir)}).collection("things");
        await docs.insertMany([{ _id: "a", n: 1 }, { _id: "b", n: 2 }, { _id: "c", n: 3 }]);
        await docs.updateOne({ _id: "a" }, { $inc: { n: 10 } });
        await docs.updateOne({ _id: "b" }, { $set: { n: 20 } });
        await docs.deleteOne({ _id: "c" });
        await docs.insertOne({ _id: "d", n: 4 });
        process.stdout.write("written\\n");
        setInterval(() => undefined, 1000);
      })();
    `;
    await killedOnceWritten(script);

    const store = openStore(dir);
    const docs = store.collection<{ _id: string; n: number }>("things");
    expect(await docs.find({}, { sort: { _id: 1 } })).toEqual([
      { _id: "a", n: 11 },
      { _id: "b", n: 20 },
      { _id: "d", n: 4 },
    ]);
    await closeStore(store);
  }, 30_000);

  it("when 200 writes run at once and the process is killed (-9) as soon as all were answered, then the next store finds every one", async () => {
    const dir = freshDir();
    const script = `
      const { NedbStore } = require("./shared/storage");
      (async () => {
        const docs = new NedbStore(${JSON.stringify(dir)}).collection("things");
        await docs.insertMany([{ _id: "counter", n: 0 }]);
        await Promise.all(
          Array.from({ length: 100 }, (_, i) => [
            docs.insertOne({ _id: "d" + i, n: i }),
            docs.updateOne({ _id: "counter" }, { $inc: { n: 1 } }),
          ]).flat(),
        );
        process.stdout.write("written\\n");
        setInterval(() => undefined, 1000);
      })();
    `;
    await killedOnceWritten(script);

    const store = openStore(dir);
    const docs = store.collection<{ _id: string; n: number }>("things");
    expect(await docs.findOne({ _id: "counter" })).toEqual({ _id: "counter", n: 100 });
    expect(await docs.count({ _id: { $ne: "counter" } })).toBe(100);
    await closeStore(store);
  }, 30_000);

  it("when a read sees a write that was not awaited, then the read answers only after that write is in the file", async () => {
    const dir = freshDir();
    const store = openStore(dir);
    const docs = store.collection<{ _id: string; n: number }>("things");
    await docs.insertOne({ _id: "warm-up", n: 0 });
    const write = docs.insertOne({ _id: "unawaited", n: 1 });
    const seen = await docs.findOne({ _id: "unawaited" });
    expect(seen).toEqual({ _id: "unawaited", n: 1 });
    expect(fs.readFileSync(path.join(dir, "things.db"), "utf8")).toContain('"_id":"unawaited"');
    await write;
    await closeStore(store);
  });

  it("when readById sees a change or removal that was not awaited, then it answers only after that line is in the file", async () => {
    const dir = freshDir();
    const store = openStore(dir);
    const docs = store.collection<{ _id: string; n: number }>("things");
    await docs.insertMany([
      { _id: "changed", n: 0 },
      { _id: "removed", n: 0 },
    ]);
    const file = path.join(dir, "things.db");
    const change = docs.updateOne({ _id: "changed" }, { $set: { n: 1 } });
    expect(await docs.readById("changed")).toEqual({ _id: "changed", n: 1 });
    expect(fs.readFileSync(file, "utf8")).toContain('{"_id":"changed","n":1}');
    const removal = docs.deleteOne({ _id: "removed" });
    expect(await docs.readById("removed")).toBeNull();
    expect(fs.readFileSync(file, "utf8")).toContain('{"$$deleted":true,"_id":"removed"}');
    await Promise.all([change, removal]);
    await closeStore(store);
  });

  it("when a store holds a dir, then the lock file names this process and close removes it", async () => {
    const dir = freshDir();
    const store = openStore(dir);
    expect(fs.readFileSync(lockOf(dir), "utf8").trim()).toBe(String(process.pid));
    await closeStore(store);
    expect(fs.existsSync(lockOf(dir))).toBe(false);
  });

  it("when two stores of this process share a dir, then the lock stays until the last one closes", async () => {
    const dir = freshDir();
    const first = openStore(dir);
    const second = openStore(dir);
    await closeStore(first);
    expect(fs.readFileSync(lockOf(dir), "utf8")).toBe(String(process.pid));
    await closeStore(second);
    expect(fs.existsSync(lockOf(dir))).toBe(false);
  });

  it("when the lock holds the pid of a live other process, then the constructor throws a clear error", async () => {
    const dir = freshDir();
    sleeper = spawn("sleep", ["30"], { stdio: "ignore" });
    const pid = sleeper.pid as number;
    expect(pid).toBeGreaterThan(0);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(lockOf(dir), String(pid));

    expect(() => openStore(dir)).toThrow(new RegExp(`in use by process ${pid}\\b.*single-process`));
    // The other process keeps its lock.
    expect(fs.readFileSync(lockOf(dir), "utf8")).toBe(String(pid));

    sleeper.kill();
    await new Promise((resolve) => sleeper?.once("exit", resolve));
  });

  it("when another process opens a dir this process holds, then it fails and names this process", async () => {
    const dir = freshDir();
    const store = openStore(dir);
    const script = `const { NedbStore } = require(${JSON.stringify(path.resolve(__dirname, "../../shared/storage/nedb.ts"))});
new NedbStore(process.argv[1]);`;
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        ["--require", "tsx/cjs", "-e", script, dir],
        { cwd: path.resolve(__dirname, "../.."), timeout: 10_000 },
        (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
      );
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`in use by process ${process.pid}`);
    expect(fs.readFileSync(lockOf(dir), "utf8")).toBe(String(process.pid));
    await closeStore(store);
  });

  it("when the lock holds the pid of a dead process, then it is taken over", async () => {
    const dir = freshDir();
    const pid = await deadPid();
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(lockOf(dir), String(pid));

    const store = openStore(dir);
    expect(fs.readFileSync(lockOf(dir), "utf8")).toBe(String(process.pid));
    await store.collection<Doc>("things").insertOne({ _id: "a", n: 1, at: new Date(), tags: [] });
    await closeStore(store);
    expect(fs.existsSync(lockOf(dir))).toBe(false);
  });

  it("when the lock file holds no pid, then it is taken over", async () => {
    const dir = freshDir();
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(lockOf(dir), "");
    const store = openStore(dir);
    expect(fs.readFileSync(lockOf(dir), "utf8")).toBe(String(process.pid));
    await closeStore(store);
  });
});

interface Thing {
  _id: string;
  n: number;
  email?: string;
}

/** What the StoreWriteError of a failed write looks like to its caller (and after the transporter). */
const storeWriteError = (reason: "full" | "unwritable", code: string) =>
  expect.objectContaining({
    code: 507,
    type: "STORE_WRITE_FAILED",
    data: { reason, store: "things", code },
  });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Retries `write` until it goes through (the store checks a failed file again once a second). */
async function onceWritable<T>(write: () => Promise<T>, withinMs = 5000): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    try {
      return await write();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(100);
    }
  }
}

/** The documents a fresh store finds in a copy of `dir`'s file of "things": what a restart would load. */
async function reloaded(dir: string): Promise<Thing[]> {
  const copy = freshDir();
  fs.mkdirSync(copy, { recursive: true });
  fs.copyFileSync(path.join(dir, "things.db"), path.join(copy, "things.db"));
  const store = openStore(copy);
  try {
    return await store.collection<Thing>("things").find({}, { sort: { _id: 1 } });
  } finally {
    await closeStore(store);
  }
}

describe("NeDB on a disk that fails", () => {
  const seeded = [
    { _id: "deleted", n: 0 },
    { _id: "kept", n: 0 },
    { _id: "updated", n: 0 },
  ];

  async function seededStore(dir: string, options: { fsync?: boolean } = {}) {
    const store = new NedbStore(dir, options);
    open.add(store);
    const things = store.collection<Thing>("things");
    await things.createIndex({ fields: ["email"], unique: true, sparse: true });
    await things.insertMany(seeded);
    return { store, things, file: path.join(dir, "things.db") };
  }

  it("when the disk fills up in the middle of a write, then it and the writes asked with it fail with 507, and neither memory nor the file (cut back, and loaded again) holds any of them", async () => {
    const dir = freshDir();
    const { store, things, file } = await seededStore(dir);
    const before = fs.readFileSync(file, "utf8");
    const disk = failWritesIn(dir, "ENOSPC", { partialFirst: true });
    try {
      const writes = Promise.allSettled([
        things.insertOne({ _id: "inserted", n: 1, email: "a@x" }),
        things.updateOne({ _id: "updated" }, { $set: { n: 99 } }),
        things.deleteOne({ _id: "deleted" }),
        things.findOneAndUpdate({ _id: "kept" }, { $inc: { n: 1 } }, { upsert: true }),
        things.updateOne({ _id: "new" }, { $set: { n: 5 } }, { upsert: true }),
      ]);
      // A read asked along with them answers without any of them.
      expect(await things.findOne({ _id: "inserted" })).toBeNull();
      const results = await writes;
      expect(results.map((r) => r.status)).toEqual(Array(5).fill("rejected"));
      for (const r of results) {
        expect((r as PromiseRejectedResult).reason).toEqual(storeWriteError("full", "ENOSPC"));
      }
      // Half of the first write's line reached the file before the disk was full: it was cut off again.
      expect(fs.readFileSync(file, "utf8")).toBe(before);
      expect(await things.find({}, { sort: { _id: 1 } })).toEqual(seeded);
      expect(await reloaded(dir)).toEqual(seeded);
    } finally {
      disk.restore();
    }
    await closeStore(store);
  });

  it("when writes keep failing, then further writes are refused at once without touching the file, while reads still answer", async () => {
    const dir = freshDir();
    const { store, things } = await seededStore(dir);
    const disk = failWritesIn(dir, "EIO");
    try {
      await expect(things.insertOne({ _id: "a", n: 1 })).rejects.toEqual(
        storeWriteError("unwritable", "EIO"),
      );
      const tried = disk.failures;
      // Within the second after the failure: refused before NeDB or the file see it.
      await expect(things.updateOne({ _id: "kept" }, { $set: { n: 1 } })).rejects.toEqual(
        storeWriteError("unwritable", "EIO"),
      );
      expect(disk.failures).toBe(tried);
      expect(await things.findOne({ _id: "kept" })).toEqual({ _id: "kept", n: 0 });
      expect(await things.count({})).toBe(3);
    } finally {
      disk.restore();
    }
    await closeStore(store);
  });

  it("when the disk takes writes again, then writes go through within seconds, and the file holds them and none of the failed ones", async () => {
    const dir = freshDir();
    const { store, things } = await seededStore(dir);
    const disk = failWritesIn(dir, "ENOSPC");
    try {
      await expect(things.insertOne({ _id: "lost", n: 1, email: "a@x" })).rejects.toEqual(
        storeWriteError("full", "ENOSPC"),
      );
      await expect(things.deleteOne({ _id: "deleted" })).rejects.toEqual(storeWriteError("full", "ENOSPC"));
    } finally {
      disk.restore();
    }
    // The failed insert's unique email is free: the index does not hold it either.
    await onceWritable(() => things.insertOne({ _id: "after", n: 2, email: "a@x" }));
    await things.updateOne({ _id: "updated" }, { $inc: { n: 1 } });
    const expected = [
      { _id: "after", n: 2, email: "a@x" },
      { _id: "deleted", n: 0 },
      { _id: "kept", n: 0 },
      { _id: "updated", n: 1 },
    ];
    expect(await things.find({}, { sort: { _id: 1 } })).toEqual(expected);
    expect(await reloaded(dir)).toEqual(expected);
    await closeStore(store);
    const again = openStore(dir);
    expect(await again.collection<Thing>("things").find({}, { sort: { _id: 1 } })).toEqual(expected);
    await closeStore(again);
  });

  it("when a store syncs each write (fsync), then a write is synced before it answers, and a failed sync fails it, takes its line out of the file and leaves memory without it", async () => {
    const dir = freshDir();
    const { store, things, file } = await seededStore(dir, { fsync: true });
    const realOpen = fs.promises.open;
    let failSync = false;
    const syncs: string[] = [];
    const opens = jest.spyOn(fs.promises, "open").mockImplementation((async (...args: unknown[]) => {
      const handle = await (realOpen as (...a: unknown[]) => Promise<fs.promises.FileHandle>)(...args);
      if (args[0] !== file) return handle;
      handle.datasync = async () => {
        syncs.push(fs.readFileSync(file, "utf8"));
        if (failSync) throw Object.assign(writeError("EIO"), { syscall: "fdatasync" });
      };
      return handle;
    }) as typeof fs.promises.open);
    try {
      await things.insertOne({ _id: "synced", n: 1 });
      // Synced with its line in the file, before it answered.
      expect(syncs).toHaveLength(1);
      expect(syncs[0]).toContain('"_id":"synced"');

      failSync = true;
      await expect(things.updateOne({ _id: "kept" }, { $set: { n: 7 } })).rejects.toEqual(
        storeWriteError("unwritable", "EIO"),
      );
      expect(syncs[1]).toContain('{"_id":"kept","n":7}');
      expect(fs.readFileSync(file, "utf8")).not.toContain('"n":7');
      expect(await things.findOne({ _id: "kept" })).toEqual({ _id: "kept", n: 0 });
      failSync = false;
      await onceWritable(() => things.insertOne({ _id: "after", n: 2 }));
    } finally {
      opens.mockRestore();
    }
    expect((await reloaded(dir)).map((d) => [d._id, d.n])).toEqual([
      ["after", 2],
      ["deleted", 0],
      ["kept", 0],
      ["synced", 1],
      ["updated", 0],
    ]);
    await closeStore(store);
  });
});
