/**
 * The embedded store compacts its files while running (docs/decisions/0078-nedb-compaction-while-running.md):
 * a file that has grown to twice its size after the last compaction, at least half of it dead lines,
 * is rewritten from memory through NeDB's compactDatafileAsync, on the group-commit write path
 * (nedb-group-commit hook) and on NeDB's own
 * (the hook forced off, INTERNALS_HOOKS_OFF=all); writes arriving meanwhile are neither lost nor
 * duplicated, in memory or in the file a kill -9 would leave. A store's close compacts only such a file
 * and syncs the others; a compaction syncs the file and its folder before it takes the collection's
 * queue.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Datastore from "@seald-io/nedb";
import { NedbStore, type Compaction, type Collection } from "../../shared/storage";
import { COMPACTION_MIN_GROWTH, compactionPhase, syncToDisk } from "../../shared/storage/nedb-compaction";

interface Doc {
  _id: string;
  n: number;
  pad: string;
}

const root = fs.mkdtempSync(path.join(os.tmpdir(), "storage-nedb-compaction-"));
let dirs = 0;
const freshDir = (): string => path.join(root, `db-${++dirs}`);
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const PAD = "x".repeat(2_000);
const SEEDED = 600;
/** At most this many writes arrive while a compaction runs (one a turn). */
const LATE_WRITES = 2_000;
const idOf = (i: number) => `d${String(i).padStart(4, "0")}`;
const sizeOf = (file: string) => fs.statSync(file).size;
const turn = () => new Promise((r) => setImmediate(r));

/** The two write paths each behaviour is checked on, and the hooks forced off for each. */
const writePaths: [string, string[]][] = [
  ["the group commit (nedb-group-commit hook on)", []],
  ["NeDB's own appends (INTERNALS_HOOKS_OFF=all)", ["all"]],
];

/** A collection whose file holds three lines per document: about three times its data. */
async function grown(coll: Collection<Doc>): Promise<void> {
  await coll.insertMany(Array.from({ length: SEEDED }, (_, i) => ({ _id: idOf(i), n: 0, pad: PAD })));
  for (const n of [1, 2]) {
    await Promise.all(
      Array.from({ length: SEEDED }, (_, i) => coll.updateOne({ _id: idOf(i) }, { $set: { n } })),
    );
  }
}

/** What a process killed now would find: the file loaded as NeDB loads it, from a copy. */
async function loadedFromFile(file: string): Promise<Doc[]> {
  const copy = `${file}.copy-${Date.now()}`;
  fs.copyFileSync(file, copy);
  try {
    const ds = new Datastore<Doc>({ filename: copy });
    await ds.loadDatabaseAsync();
    return (await ds.findAsync({}).sort({ _id: 1 })) as Doc[];
  } finally {
    fs.rmSync(copy, { force: true });
  }
}

describe.each(writePaths)("NeDB compaction while running, on %s", (_, off) => {
  it("when writes arrive before, during and after a compaction, then none is lost or duplicated, in memory or in the file", async () => {
    const dir = freshDir();
    const compactions: Compaction[] = [];
    const watch = {
      failed() {},
      failing() {},
      recovered() {},
      compacted: (c: Compaction) => compactions.push(c),
    };
    const store = new NedbStore(dir, { off }, { compactionIntervalMs: 0, watch });
    try {
      const coll = store.collection<Doc>("things");
      const file = path.join(dir, "things.db");
      await grown(coll);
      const sizeBefore = sizeOf(file);
      const expected = new Map<string, number>(Array.from({ length: SEEDED }, (_, i) => [idOf(i), 2]));
      const writes: Promise<unknown>[] = [];

      // Asked for just before the compaction, in the same turn: they run first (on the group commit,
      // their lines still wait to be written when the compaction starts).
      for (let i = 200; i < 220; i++) {
        writes.push(coll.updateOne({ _id: idOf(i) }, { $set: { n: 5 } }));
        expected.set(idOf(i), 5);
      }
      let compacting = true;
      const compaction = store.compactGrown().finally(() => (compacting = false));
      // Asked for once it has started: inserts, updates and deletes, in the same turn (they run while
      // its lines are made, before it takes the collection's queue, or after it)...
      for (let i = 0; i < 100; i++) {
        writes.push(coll.insertOne({ _id: `new-${i}`, n: 0, pad: PAD }));
        expected.set(`new-${i}`, 0);
        writes.push(coll.updateOne({ _id: idOf(i) }, { $set: { n: 10 } }));
        expected.set(idOf(i), 10);
      }
      for (let i = 500; i < 550; i++) {
        writes.push(coll.deleteOne({ _id: idOf(i) }));
        expected.delete(idOf(i));
      }
      // ...and in every turn while it runs, up to LATE_WRITES of them: NeDB's own path writes one line
      // at a time, and a write every turn can outrun it (on one slow machine the loop asked for 256,148
      // during a 4 s compaction, which then took over 25 s to write: the test timed out on the disk).
      let late = 0;
      while (compacting) {
        if (late < LATE_WRITES) {
          writes.push(coll.insertOne({ _id: `late-${late}`, n: late, pad: "" }));
          expected.set(`late-${late}`, late);
          late++;
        }
        await turn();
      }
      await expect(compaction).resolves.toEqual(["things"]);
      await Promise.all(writes);
      expect(late).toBeGreaterThan(0);

      const want = [...expected.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([id, n]) => ({ id, n }));
      const inMemory = (await coll.find({}, { sort: { _id: 1 } })).map((d) => ({ id: d._id, n: d.n }));
      expect(inMemory).toEqual(want);
      const inFile = (await loadedFromFile(file)).map((d) => ({ id: d._id, n: d.n }));
      expect(inFile).toEqual(want);

      // The file: the compacted documents once each, then one line per write that came after. No line
      // twice (every write here makes a line of its own), none of an earlier write written again. At
      // most as many as if every write asked for after the start had come after the compaction.
      const lines = fs.readFileSync(file, "utf8").split("\n").filter(Boolean);
      expect(new Set(lines).size).toBe(lines.length);
      expect(lines.length).toBeGreaterThanOrEqual(expected.size);
      expect(lines.length).toBeLessThanOrEqual(SEEDED + 100 + 100 + 50 + late);
      expect(compactions).toHaveLength(1);
      expect(compactions[0].bytesBefore).toBe(sizeBefore);
      expect(compactions[0].bytesAfter).toBeLessThan(sizeBefore / 2);
    } finally {
      await store.close();
    }
  });

  it("when a file has not grown enough since its last compaction, then it is left alone; once it has, it is compacted to about its data", async () => {
    const dir = freshDir();
    const store = new NedbStore(dir, { off }, { compactionIntervalMs: 0 });
    try {
      const coll = store.collection<Doc>("things");
      const file = path.join(dir, "things.db");
      await coll.insertOne({ _id: "a", n: 0, pad: PAD });
      for (let n = 1; n <= 20; n++) await coll.updateOne({ _id: "a" }, { $set: { n } });
      // Many times its data, but short of COMPACTION_MIN_GROWTH: not worth a rewrite.
      expect(sizeOf(file)).toBeLessThan(COMPACTION_MIN_GROWTH);
      await expect(store.compactGrown()).resolves.toEqual([]);

      await grown(coll);
      const before = sizeOf(file);
      await expect(store.compactGrown()).resolves.toEqual(["things"]);
      const after = sizeOf(file);
      expect(after).toBeLessThan(before / 2);
      // Just compacted: not again until it has grown again.
      await expect(store.compactGrown()).resolves.toEqual([]);
      expect(sizeOf(file)).toBe(after);
    } finally {
      await store.close();
    }
  });

  it("when a file has grown by inserts only, then it is not rewritten, nor looked into again before it doubles; once half of it is dead lines, it is compacted", async () => {
    const dir = freshDir();
    const store = new NedbStore(dir, { off }, { compactionIntervalMs: 0 });
    const getAllData = jest.spyOn(Datastore.prototype, "getAllData");
    try {
      const coll = store.collection<Doc>("things");
      const file = path.join(dir, "things.db");
      await coll.insertOne({ _id: "a", n: 0, pad: PAD });
      await expect(store.compactGrown()).resolves.toEqual([]); // the first look: its size is the base
      await coll.insertMany(Array.from({ length: SEEDED }, (_, i) => ({ _id: idOf(i), n: 0, pad: PAD })));
      const inserted = sizeOf(file);
      expect(inserted).toBeGreaterThan(COMPACTION_MIN_GROWTH);

      getAllData.mockClear();
      await expect(store.compactGrown()).resolves.toEqual([]);
      expect(sizeOf(file)).toBe(inserted); // a rewrite would not have shrunk it
      expect(getAllData).toHaveBeenCalledTimes(1);
      getAllData.mockClear();
      await expect(store.compactGrown()).resolves.toEqual([]);
      expect(getAllData).not.toHaveBeenCalled(); // not doubled since: only the stat

      for (const n of [1, 2]) {
        await Promise.all(
          Array.from({ length: SEEDED }, (_, i) => coll.updateOne({ _id: idOf(i) }, { $set: { n } })),
        );
      }
      const updated = sizeOf(file);
      await expect(store.compactGrown()).resolves.toEqual(["things"]);
      expect(sizeOf(file)).toBeLessThan(updated / 2);
      expect((await loadedFromFile(file)).map((d) => d.n)).toEqual([
        0,
        ...Array.from({ length: SEEDED }, () => 2),
      ]);
    } finally {
      getAllData.mockRestore();
      await store.close();
    }
  });
});

describe("NeDB compaction on its interval", () => {
  it("when the interval passes and a file has grown enough, then it is compacted without being asked, its data intact", async () => {
    const dir = freshDir();
    const compactions: Compaction[] = [];
    const watch = {
      failed() {},
      failing() {},
      recovered() {},
      compacted: (c: Compaction) => compactions.push(c),
    };
    const store = new NedbStore(dir, { off: [] }, { compactionIntervalMs: 50, watch });
    try {
      const coll = store.collection<Doc>("things");
      const file = path.join(dir, "things.db");
      // One document of 2 KB rewritten 700 times: 1.4 MB of lines for 2 KB of data.
      await coll.insertOne({ _id: "a", n: 0, pad: PAD });
      for (let n = 1; n <= 700; n++) await coll.updateOne({ _id: "a" }, { $set: { n } });
      const deadline = Date.now() + 10_000;
      while (compactions.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(compactions.length).toBeGreaterThan(0);
      expect(compactions[0].bytesBefore).toBeGreaterThanOrEqual(COMPACTION_MIN_GROWTH);
      expect(compactions[0].bytesAfter).toBeLessThan(10_000);
      expect(sizeOf(file)).toBeLessThan(700 * PAD.length);
      expect((await loadedFromFile(file)).map((d) => d.n)).toEqual([700]);
    } finally {
      await store.close();
    }
  });

  it("when a store opens with a long interval, then it first looks at its files after a random part of it, then once an interval", async () => {
    // Math.random() 0.001 of the default 60 s: the first look about 60 ms after opening. Stores opened
    // together (a cluster started at once) so look, and compact, at different instants (decision 0052).
    const random = jest.spyOn(Math, "random").mockReturnValue(0.001);
    const store = new NedbStore(freshDir(), { off: [] }, { compactionIntervalMs: 60_000 });
    random.mockRestore();
    const looks = jest.spyOn(store, "compactGrown");
    try {
      store.collection<Doc>("things");
      const deadline = Date.now() + 10_000;
      while (looks.mock.calls.length === 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      expect(looks).toHaveBeenCalledTimes(1);
      await new Promise((r) => setTimeout(r, 300));
      expect(looks).toHaveBeenCalledTimes(1);
    } finally {
      await store.close();
    }
  });

  it("when the phase is drawn, then it is a whole number of milliseconds within the interval", () => {
    expect(compactionPhase(60_000, () => 0)).toBe(0);
    expect(compactionPhase(60_000, () => 0.5)).toBe(30_000);
    expect(compactionPhase(60_000, () => 0.999_999_9)).toBe(59_999);
  });
});

describe("NeDB compaction of a file above STORE_COMPACTION_MAX_MB", () => {
  it("when a grown file is larger than the limit, then it is not compacted while running nor at close, told once, and compacted when it is next loaded", async () => {
    const dir = freshDir();
    const deferrals: { store: string; bytes: number; maxBytes: number }[] = [];
    const watch = {
      failed() {},
      failing() {},
      recovered() {},
      compactionDeferred: (c: { store: string; bytes: number; maxBytes: number }) => deferrals.push(c),
    };
    const maxBytes = COMPACTION_MIN_GROWTH; // below the grown file's size (about 3.6 MB)
    const store = new NedbStore(
      dir,
      { off: [] },
      { compactionIntervalMs: 0, compactionMaxBytes: maxBytes, watch },
    );
    const file = path.join(dir, "things.db");
    let before = 0;
    try {
      const coll = store.collection<Doc>("things");
      await grown(coll);
      before = sizeOf(file);
      expect(before).toBeGreaterThan(maxBytes);
      await expect(store.compactGrown()).resolves.toEqual([]);
      await expect(store.compactGrown()).resolves.toEqual([]);
      expect(sizeOf(file)).toBe(before);
      expect(deferrals).toEqual([{ store: "things", path: file, bytes: before, maxBytes }]);
    } finally {
      await store.close();
    }
    // Closing leaves it too (its compaction could outlast the stop's bound), every line written.
    expect(sizeOf(file)).toBe(before);
    // The next start loads it and NeDB rewrites it as it loads: compacted, the data intact.
    const reopened = new NedbStore(
      dir,
      { off: [] },
      { compactionIntervalMs: 0, compactionMaxBytes: maxBytes },
    );
    try {
      const docs = await reopened.collection<Doc>("things").find({});
      expect(docs.map((d) => d.n)).toEqual(Array.from({ length: SEEDED }, () => 2));
      expect(sizeOf(file)).toBeLessThan(before / 2);
    } finally {
      await reopened.close();
    }
  });

  it("when a grown file is within the limit, then it is compacted while running as before", async () => {
    const dir = freshDir();
    const store = new NedbStore(
      dir,
      { off: [] },
      { compactionIntervalMs: 0, compactionMaxBytes: 64 * 2 ** 20 },
    );
    try {
      await grown(store.collection<Doc>("things"));
      await expect(store.compactGrown()).resolves.toEqual(["things"]);
    } finally {
      await store.close();
    }
  });
});

/** Records, in `log`, each path whose handle is synced through fs.promises, and each NeDB compaction. */
function watchSyncs(log: string[]): () => void {
  const open = fs.promises.open;
  const opened = jest.spyOn(fs.promises, "open").mockImplementation(async (file, flags, mode) => {
    const handle = await open(file, flags, mode);
    const sync = handle.sync.bind(handle);
    handle.sync = () => (log.push(`sync ${String(file)}`), sync());
    return handle;
  });
  const compact = Datastore.prototype.compactDatafileAsync;
  const compacted = jest.spyOn(Datastore.prototype, "compactDatafileAsync").mockImplementation(function (
    this: Datastore,
  ) {
    log.push("compaction");
    return compact.call(this);
  });
  return () => {
    opened.mockRestore();
    compacted.mockRestore();
  };
}

describe.each(writePaths)("Closing a store, on %s", (_, off) => {
  /** A store within the limit, not compacting while running; the file of its `things`. */
  const storeIn = (dir: string) => ({
    store: new NedbStore(dir, { off }, { compactionIntervalMs: 0, compactionMaxBytes: 64 * 2 ** 20 }),
    file: path.join(dir, "things.db"),
  });

  it("when a file within the limit is mostly dead lines, then closing the store compacts it", async () => {
    const { store, file } = storeIn(freshDir());
    await grown(store.collection<Doc>("things"));
    const before = sizeOf(file);
    await store.close();
    expect(sizeOf(file)).toBeLessThan(before / 2);
    expect((await loadedFromFile(file)).map((d) => d.n)).toEqual(Array.from({ length: SEEDED }, () => 2));
  });

  it("when a file was grown by inserts, then closing the store leaves it as written, syncs it and its folder, and it loads whole", async () => {
    const { store, file } = storeIn(freshDir());
    const docs = Array.from({ length: SEEDED }, (_, i) => ({ _id: idOf(i), n: i, pad: PAD }));
    await store.collection<Doc>("things").insertMany(docs);
    const before = fs.statSync(file);
    const log: string[] = [];
    const restore = watchSyncs(log);
    try {
      await store.close();
    } finally {
      restore();
    }
    expect(log).toEqual([`sync ${file}`, `sync ${path.dirname(file)}`]);
    // Not rewritten: a compaction writes a new file (another inode) in place of the old.
    expect(fs.statSync(file)).toMatchObject({ ino: before.ino, size: before.size });
    expect(await loadedFromFile(file)).toEqual(docs);
  });
});

describe.each(writePaths)("Syncing ahead of a compaction, on %s", (_, off) => {
  it("when a grown file is compacted, then it and its folder are synced before NeDB's compaction starts", async () => {
    const dir = freshDir();
    const store = new NedbStore(dir, { off }, { compactionIntervalMs: 0, compactionMaxBytes: 0 });
    const log: string[] = [];
    try {
      await grown(store.collection<Doc>("things"));
      const restore = watchSyncs(log);
      try {
        await expect(store.compactGrown()).resolves.toEqual(["things"]);
      } finally {
        restore();
      }
    } finally {
      await store.close();
    }
    // NeDB's own syncs come after, inside its compaction (through its own handles or not).
    expect(log.slice(0, 3)).toEqual([`sync ${path.join(dir, "things.db")}`, `sync ${dir}`, "compaction"]);
  });
});

describe("syncToDisk", () => {
  it("when the file is not there, then nothing is synced and it says so", async () => {
    const log: string[] = [];
    const restore = watchSyncs(log);
    try {
      await expect(syncToDisk(path.join(freshDir(), "none.db"))).resolves.toBe(false);
    } finally {
      restore();
    }
    expect(log).toEqual([]);
  });
});
