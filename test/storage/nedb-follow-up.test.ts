/**
 * Writes that follow from what a group write answered go out in the same turn of the event loop, and a
 * loop of writes still yields to it (shared/storage/nedb-follow-up).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { NedbStore } from "../../shared/storage";
import { MAX_WAVES } from "../../shared/storage/nedb-follow-up";

interface Doc {
  _id: string;
  n: number;
}

const root = fs.mkdtempSync(path.join(os.tmpdir(), "storage-nedb-follow-up-"));
let dir: string;
let store: NedbStore;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(root, "db-"));
  // The group-commit hook whatever INTERNALS_HOOKS_OFF says: the follow-up is part of it.
  store = new NedbStore(dir, { off: [] });
});

afterEach(async () => {
  await store.close();
});

afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** Whether `write` is answered before a `setImmediate` queued as it starts: within this turn. */
async function answeredThisTurn(write: () => Promise<unknown>): Promise<boolean> {
  let nextTurn = false;
  setImmediate(() => (nextTurn = true));
  await write();
  return !nextTurn;
}

describe("NeDB writes that follow a group write", () => {
  it("when a read answered by a group write is followed by a write, then that write is answered, and in the file, before the next turn", async () => {
    const docs = store.collection<Doc>("things");
    await docs.insertMany([
      { _id: "read", n: 0 },
      { _id: "other", n: 0 },
    ]);
    // A line waiting, so that the read is answered by the turn's group write (decision 0052).
    const other = docs.updateOne({ _id: "other" }, { $set: { n: 1 } });
    await docs.readById("read");
    expect(await answeredThisTurn(() => docs.updateOne({ _id: "read" }, { $set: { n: 1 } }))).toBe(true);
    expect(fs.readFileSync(path.join(dir, "things.db"), "utf8")).toContain('{"_id":"read","n":1}');
    await other;
  });

  it("when the write that follows goes to another collection, then it is answered before the next turn too", async () => {
    const things = store.collection<Doc>("things");
    const others = store.collection<Doc>("others");
    await things.insertOne({ _id: "a", n: 0 });
    await others.insertOne({ _id: "b", n: 0 });
    const waiting = things.insertOne({ _id: "c", n: 0 });
    await things.readById("a");
    expect(await answeredThisTurn(() => others.updateOne({ _id: "b" }, { $set: { n: 1 } }))).toBe(true);
    await waiting;
  });

  it("when a loop writes one document after another, then it still yields to the event loop, once per few writes", async () => {
    const docs = store.collection<Doc>("things");
    await docs.insertOne({ _id: "x", n: 0 });
    const writes = 4 * (MAX_WAVES + 1);
    let turns = 0;
    let looping = true;
    const turn = (): void => {
      turns++;
      if (looping) setImmediate(turn);
    };
    setImmediate(turn);
    for (let i = 1; i <= writes; i++) await docs.updateOne({ _id: "x" }, { $set: { n: i } });
    looping = false;
    // Before the follow-up, each write waited for a turn of its own.
    expect(turns).toBeGreaterThanOrEqual(3);
    expect(turns).toBeLessThan(writes);
    expect(await docs.readById("x")).toEqual({ _id: "x", n: writes });
  });
});
