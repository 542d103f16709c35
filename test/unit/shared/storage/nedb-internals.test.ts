/**
 * NeDB's internals the embedded engine hooks into (shared/storage/nedb-internals): every hook finds what
 * it needs in the installed NeDB (an upgrade that changes any of it fails here), and with the hooks
 * forced off the store works NeDB's own way, on files either way readable by the other.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Datastore from "@seald-io/nedb";
import { isWrapped, reasonNotToApply, removeHook, useHook } from "../../../../shared/runtime/internals";
import { NedbStore } from "../../../../shared/storage";
import * as linesAhead from "../../../../shared/storage/nedb-lines-ahead";
import {
  compactDatafile,
  nedbGroupCommitHook,
  nedbIndexUpdateHook,
  nedbLibs,
  nedbReadByIdHook,
  nedbSerializeHook,
  type NedbPersistence,
} from "../../../../shared/storage/nedb-internals";

type Doc = { _id: string; email: string; n: number };

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), "nedb-internals-"));

describe("the NeDB hooks against the installed NeDB", () => {
  it("when the index update hook is checked, then NeDB's index class, its tree nodes and model functions are as it reads them", () => {
    expect(reasonNotToApply(nedbIndexUpdateHook, nedbLibs, [])).toBeNull();
  });

  it("when the group commit is checked on a datastore with a file, then its persistence and line format are as it uses them", () => {
    const dir = tmp();
    try {
      const ds = new Datastore({ filename: path.join(dir, "x.db") });
      const persistence = (ds as unknown as { persistence: NedbPersistence }).persistence;
      expect(
        reasonNotToApply(
          nedbGroupCommitHook({ append: () => undefined, beforeCompaction: () => undefined }),
          persistence,
          [],
        ),
      ).toBeNull();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("when the serialiser hook is checked, then NeDB's model writes and reads the lines serializeLine writes", () => {
    expect(reasonNotToApply(nedbSerializeHook, nedbLibs, [])).toBeNull();
  });

  it("when a collection is compacted with the serialiser hook on, then NeDB wrote every line through it, and the file is the one NeDB's own serialiser writes", async () => {
    const dir = tmp();
    const file = path.join(dir, "rounds.db");
    const ds = new Datastore({ filename: file });
    try {
      await ds.loadDatabaseAsync();
      await ds.ensureIndexAsync({ fieldName: "owner", sparse: true });
      const docs = Array.from({ length: 50 }, (_, i) => ({
        _id: `r${i}`,
        owner: i % 3 === 0 ? undefined : `u${i}`,
        at: new Date(i * 1000),
        members: { [`u${i}`]: { joined_at: new Date(i), fee: "1.50" } },
        list: [i, null, { deep: [new Date(0)] }],
      }));
      await ds.insertAsync(docs);
      await ds.compactDatafileAsync();
      const nedbOwn = fs.readFileSync(file, "utf8");

      expect(useHook(nedbSerializeHook, nedbLibs, { off: [] })).toBe(true);
      expect(isWrapped(nedbLibs.model.serialize)).toBe(true);
      // What the hook relies on: NeDB's persistence calls the model's serialize for each line it writes.
      const serialize = jest.spyOn(nedbLibs.model, "serialize");
      await ds.compactDatafileAsync();
      expect(serialize).toHaveBeenCalledTimes(docs.length + 1); // and the index line
      serialize.mockRestore();
      expect(fs.readFileSync(file, "utf8")).toBe(nedbOwn);
    } finally {
      removeHook(nedbSerializeHook, nedbLibs);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("when the store compacts a collection with its hooks on, then the lines are made ahead, before the compaction takes the queue and in it, NeDB's loop takes every one, and the file reads back whole", async () => {
    const dir = tmp();
    const made = jest.spyOn(linesAhead, "makeLinesAhead");
    try {
      const store = new NedbStore(dir, { off: [] });
      const rounds = store.collection<Doc & { at: Date }>("rounds");
      const docs = Array.from({ length: 300 }, (_, i) => ({
        _id: `r${String(i).padStart(3, "0")}`,
        email: `${i}@x`,
        n: i,
        at: new Date(i),
      }));
      await rounds.insertMany(docs);
      await (rounds as unknown as { compact(): Promise<void> }).compact();
      await store.close(); // the file just compacted: nothing to compact again
      // The load's compaction (in the queue, nothing yet); then this one: before the queue, and in it.
      expect(made.mock.calls.map(([lines]) => lines.length)).toEqual([0, docs.length, docs.length]);
      expect(linesAhead.linesWaiting()).toBe(0);
      const again = new NedbStore(dir, { off: ["all"] });
      expect(await again.collection<Doc>("rounds").find({}, { sort: { _id: 1 } })).toEqual(docs);
      await again.close();
    } finally {
      made.mockRestore();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("when a document is written while the store makes a compaction's lines before taking the queue, then the write answers meanwhile and the file holds it", async () => {
    const dir = tmp();
    const makeLines = linesAhead.makeLinesAhead;
    const made = jest.spyOn(linesAhead, "makeLinesAhead");
    try {
      const store = new NedbStore(dir, { off: [] });
      const rounds = store.collection<Doc>("rounds");
      await rounds.insertMany(
        Array.from({ length: 50 }, (_, i) => ({ _id: `r${i}`, email: `${i}@x`, n: i })),
      );
      let answeredMeanwhile = false;
      made.mockImplementationOnce(async (all, sliceMs) => {
        // `all` was read before this write: its line for r5 is the old one.
        await rounds.updateOne({ _id: "r5" }, { $set: { n: -5 } });
        answeredMeanwhile = true;
        return makeLines(all, sliceMs);
      });
      await (rounds as unknown as { compact(): Promise<void> }).compact();
      expect(answeredMeanwhile).toBe(true);
      await store.close();
      const again = new NedbStore(dir, { off: ["all"] });
      expect(await again.collection<Doc>("rounds").findOne({ _id: "r5" })).toEqual({
        _id: "r5",
        email: "5@x",
        n: -5,
      });
      expect(await again.collection<Doc>("rounds").count({})).toBe(50);
      await again.close();
    } finally {
      made.mockRestore();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("when the lines are made before the compaction takes the queue, then the wait it reports leaves their time out", async () => {
    const dir = tmp();
    const ds = new Datastore({ filename: path.join(dir, "rounds.db") });
    const makeLines = linesAhead.makeLinesAhead;
    const made = jest.spyOn(linesAhead, "makeLinesAhead");
    try {
      await ds.loadDatabaseAsync();
      await ds.insertAsync(Array.from({ length: 50 }, (_, i) => ({ _id: `r${i}`, n: i })));
      expect(useHook(nedbSerializeHook, nedbLibs, { off: [] })).toBe(true);
      made.mockImplementationOnce(async (all, sliceMs) => {
        await new Promise((resolve) => setTimeout(resolve, 200));
        return makeLines(all, sliceMs);
      });
      const held = await compactDatafile(ds);
      expect(made).toHaveBeenCalledTimes(1);
      expect(held).toBeLessThan(200);
    } finally {
      made.mockRestore();
      removeHook(nedbSerializeHook, nedbLibs);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("when the read path is checked on a datastore, then its queue and _id index are as it uses them", () => {
    const ds = new Datastore({ inMemoryOnly: true });
    expect(reasonNotToApply(nedbReadByIdHook, ds as never, [])).toBeNull();
  });

  it("when a datastore's queue is missing, then the read path says what it lacks", () => {
    const ds = new Datastore({ inMemoryOnly: true }) as unknown as { executor?: unknown };
    delete ds.executor;
    expect(reasonNotToApply(nedbReadByIdHook, ds as never, [])).toMatch(/lacks datastore\.executor/);
  });
});

describe("the embedded store with every NeDB hook forced off", () => {
  const off = { off: ["all"], warn: () => undefined };

  it("when documents are written, read by id, and an index made again with other options, then NeDB's own ways give the same answers", async () => {
    const dir = tmp();
    try {
      const store = new NedbStore(dir, off);
      const users = store.collection<Doc>("users");
      await users.createIndex({ fields: ["email"] });
      await users.insertMany([
        { _id: "a", email: "a@x", n: 0 },
        { _id: "b", email: "b@x", n: 0 },
      ]);
      expect(await users.updateOne({ _id: "a" }, { $inc: { n: 1 } })).toBe(1);
      expect(await users.readById("a")).toEqual({ _id: "a", email: "a@x", n: 1 });
      expect(await users.readById("zz")).toBeNull();
      // A unique index asked for where a plain one was: made again, so it refuses a second "a@x".
      await users.createIndex({ fields: ["email"], unique: true });
      await expect(users.insertOne({ _id: "c", email: "a@x", n: 0 })).rejects.toThrow();
      await store.close();

      // What NeDB wrote its way is read back by a store with the hooks on, and the other way round.
      const again = new NedbStore(dir, { off: [] });
      const reread = again.collection<Doc>("users");
      expect(await reread.find({}, { sort: { _id: 1 } })).toEqual([
        { _id: "a", email: "a@x", n: 1 },
        { _id: "b", email: "b@x", n: 0 },
      ]);
      await reread.updateOne({ _id: "b" }, { $set: { n: 5 } });
      await again.close();
      const third = new NedbStore(dir, off);
      expect(await third.collection<Doc>("users").readById("b")).toEqual({ _id: "b", email: "b@x", n: 5 });
      await third.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
