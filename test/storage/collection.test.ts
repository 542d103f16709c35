/**
 * The Collection contract: every operator the repositories rely on behaves alike on every engine.
 */
import { DuplicateKeyError } from "../../shared/storage";
import { describeEachEngine, freshCollection, uid } from "./engines";

interface Member {
  status: "joined";
  joined_at: Date;
}

interface Doc {
  _id: string;
  group?: string;
  name?: string;
  email?: string;
  n?: number;
  pending?: number;
  flag?: boolean;
  at?: Date | null;
  end_time?: Date | null;
  users?: string[];
  members?: Record<string, Member>;
  members_count?: number;
  nested?: { when: Date; label: string };
  seq?: number;
  kind?: string;
  label?: string;
}

const ids = (docs: { _id: string | number }[]): (string | number)[] => docs.map((d) => d._id);
const sortedIds = (docs: { _id: string | number }[]): (string | number)[] => ids(docs).sort();

describeEachEngine("Collection contract", (store) => {
  const coll = () => freshCollection<Doc>(store());

  describe("insert and read", () => {
    it("when a document with Date fields is inserted, then findOne returns it with the Dates as Date", async () => {
      const c = coll();
      const at = new Date("2030-01-02T03:04:05.678Z");
      const doc: Doc = {
        _id: uid("d"),
        name: "first",
        n: 42,
        flag: false,
        at,
        end_time: null,
        users: ["a", "b"],
        nested: { when: at, label: "x" },
        members: { u1: { status: "joined", joined_at: at } },
      };
      const inserted = await c.insertOne(doc);
      expect(inserted).toEqual(doc);

      const found = await c.findOne({ _id: doc._id });
      expect(found).toEqual(doc);
      expect(found?.at).toBeInstanceOf(Date);
      expect(found?.at?.getTime()).toBe(at.getTime());
      expect(found?.nested?.when).toBeInstanceOf(Date);
      expect(found?.members?.u1.joined_at).toBeInstanceOf(Date);
      expect(found?.members?.u1.joined_at.getTime()).toBe(at.getTime());
      expect(found?.end_time).toBeNull();
    });

    it("when findOne matches nothing, then it resolves to null", async () => {
      const c = coll();
      await c.insertOne({ _id: uid("d") });
      await expect(c.findOne({ _id: "missing" })).resolves.toBeNull();
    });

    it("when insertMany inserts several documents, then every one is found", async () => {
      const c = coll();
      const docs: Doc[] = [
        { _id: "a", n: 1 },
        { _id: "b", n: 2 },
        { _id: "c", n: 3 },
      ];
      await c.insertMany(docs);
      await c.insertMany([]);
      expect(await c.count({})).toBe(3);
      expect(await c.find({}, { sort: { _id: 1 } })).toEqual(docs);
    });

    it("when _id is a number, then it is found by that number and sorts numerically", async () => {
      const c = freshCollection<{ _id: number; name: string }>(store());
      await c.insertMany([
        { _id: 10, name: "ten" },
        { _id: 9, name: "nine" },
        { _id: 2, name: "two" },
      ]);
      expect((await c.findOne({ _id: 9 }))?.name).toBe("nine");
      await expect(c.findOne({ _id: "9" })).resolves.toBeNull();
      expect(ids(await c.find({}, { sort: { _id: 1 } }))).toEqual([2, 9, 10]);
    });
  });

  describe("readById", () => {
    it("when readById names a stored document, then it resolves to it with its Dates as Date", async () => {
      const c = coll();
      const at = new Date("2030-01-02T03:04:05.678Z");
      const doc: Doc = { _id: uid("d"), name: "r", at, members: { u1: { status: "joined", joined_at: at } } };
      await c.insertOne(doc);
      const read = await c.readById(doc._id);
      expect(read).toEqual(doc);
      expect(read?.members?.u1.joined_at).toBeInstanceOf(Date);
    });

    it("when readById names no document (or the same id of another type), then it resolves to null", async () => {
      const c = freshCollection<{ _id: number | string; name: string }>(store());
      await c.insertOne({ _id: 9, name: "nine" });
      await expect(c.readById("9")).resolves.toBeNull();
      await expect(c.readById(8)).resolves.toBeNull();
      expect((await c.readById(9))?.name).toBe("nine");
    });

    it("when the document is updated after readById, then what was read keeps the values it was read with", async () => {
      const c = coll();
      const at = new Date("2030-01-02T03:04:05.678Z");
      await c.insertOne({ _id: "k", n: 1, members: { u1: { status: "joined", joined_at: at } } });
      const before = await c.readById("k");
      await c.updateOne(
        { _id: "k" },
        { $inc: { n: 1 }, $set: { "members.u2": { status: "joined", joined_at: at } } },
      );
      expect(before?.n).toBe(1);
      expect(Object.keys(before?.members ?? {})).toEqual(["u1"]);
      expect((await c.readById("k"))?.n).toBe(2);
    });

    it("when an update is asked for and not awaited before readById, then readById sees it", async () => {
      const c = coll();
      await c.insertOne({ _id: "o", n: 1 });
      const update = c.updateOne({ _id: "o" }, { $set: { n: 5 } });
      const insert = c.insertOne({ _id: "p", n: 7 });
      const [read, added] = await Promise.all([c.readById("o"), c.readById("p"), update, insert]);
      expect(read?.n).toBe(5);
      expect(added?.n).toBe(7);
    });
  });

  describe("duplicate keys", () => {
    it("when a document is inserted with an _id that exists, then insertOne throws DuplicateKeyError", async () => {
      const c = coll();
      await c.insertOne({ _id: "same", name: "original" });
      await expect(c.insertOne({ _id: "same", name: "copy" })).rejects.toBeInstanceOf(DuplicateKeyError);
      expect(await c.find({})).toEqual([{ _id: "same", name: "original" }]);
    });

    it("when a unique index exists and a second document repeats the value, then insertOne throws DuplicateKeyError", async () => {
      const c = coll();
      await c.createIndex({ fields: ["email"], unique: true });
      await c.insertOne({ _id: "a", email: "x@example.com" });
      await expect(c.insertOne({ _id: "b", email: "x@example.com" })).rejects.toBeInstanceOf(
        DuplicateKeyError,
      );
      await c.insertOne({ _id: "c", email: "y@example.com" });
      expect(sortedIds(await c.find({}))).toEqual(["a", "c"]);
    });

    it("when createIndex is called twice for the same spec, then it is idempotent", async () => {
      const c = coll();
      await c.createIndex({ fields: ["email"], unique: true });
      await c.createIndex({ fields: ["email"], unique: true });
      await c.createIndex({ fields: ["group"] });
      await c.insertOne({ _id: "a", email: "x@example.com", group: "g" });
      await c.insertOne({ _id: "b", email: "y@example.com", group: "g" });
      expect(await c.count({ group: "g" })).toBe(2);
    });

    it("when an index is created again with other options, then the new options apply", async () => {
      const c = coll();
      await c.createIndex({ fields: ["email"] });
      await c.insertOne({ _id: "a", email: "x@example.com" });
      await c.createIndex({ fields: ["email"], unique: true });
      await expect(c.insertOne({ _id: "b", email: "x@example.com" })).rejects.toBeInstanceOf(
        DuplicateKeyError,
      );
    });

    it("when a sparse index is queried, then documents without the field are left out and the rest found", async () => {
      const c = coll();
      await c.createIndex({ fields: ["pending"], sparse: true });
      await c.insertMany([{ _id: "a", pending: 2 }, { _id: "b" }, { _id: "c", pending: 1 }]);
      await c.updateOne({ _id: "b" }, { $set: { pending: 3 } });
      await c.updateOne({ _id: "a" }, { $unset: { pending: true } });
      expect(sortedIds(await c.find({ pending: { $gt: 0 } }))).toEqual(["b", "c"]);
    });

    it("when insertMany repeats an existing _id, then it throws DuplicateKeyError", async () => {
      const c = coll();
      await c.insertOne({ _id: "a" });
      await expect(c.insertMany([{ _id: "b" }, { _id: "a" }])).rejects.toBeInstanceOf(DuplicateKeyError);
      // How many of the batch were written differs (NeDB: none; MongoDB ordered insert: those before it).
      expect(await c.count({ _id: "a" })).toBe(1);
    });

    it("when updateOne sets a unique field to a taken value, then it throws DuplicateKeyError", async () => {
      const c = coll();
      await c.createIndex({ fields: ["email"], unique: true });
      await c.insertMany([
        { _id: "a", email: "a@example.com" },
        { _id: "b", email: "b@example.com" },
      ]);
      await expect(c.updateOne({ _id: "b" }, { $set: { email: "a@example.com" } })).rejects.toBeInstanceOf(
        DuplicateKeyError,
      );
      expect((await c.findOne({ _id: "b" }))?.email).toBe("b@example.com");
    });

    it("when an upsert would insert a taken unique value, then updateOne throws DuplicateKeyError", async () => {
      const c = coll();
      await c.createIndex({ fields: ["email"], unique: true });
      await c.insertOne({ _id: "a", email: "a@example.com" });
      await expect(
        c.updateOne({ _id: "b" }, { $set: { email: "a@example.com" } }, { upsert: true }),
      ).rejects.toBeInstanceOf(DuplicateKeyError);
      expect(await c.count({})).toBe(1);
    });

    it("when findOneAndUpdate sets a unique field to a taken value, then it throws DuplicateKeyError", async () => {
      const c = coll();
      await c.createIndex({ fields: ["email"], unique: true });
      await c.insertMany([
        { _id: "a", email: "a@example.com" },
        { _id: "b", email: "b@example.com" },
      ]);
      await expect(
        c.findOneAndUpdate({ _id: "b" }, { $set: { email: "a@example.com" } }),
      ).rejects.toBeInstanceOf(DuplicateKeyError);
    });
  });

  describe("find and count", () => {
    const seed = async () => {
      const c = coll();
      await c.insertMany([
        { _id: "a", group: "x", name: "alpha", n: 5 },
        { _id: "b", group: "y", name: "bravo", n: 3 },
        { _id: "c", group: "x", name: "charlie", n: 9 },
        { _id: "d", group: "y", name: "delta", n: 1 },
        { _id: "e", group: "x", name: "echo", n: 7 },
      ]);
      return c;
    };

    it("when find filters with $in, then it returns exactly the listed ids that exist", async () => {
      const c = await seed();
      expect(sortedIds(await c.find({ _id: { $in: ["a", "c", "missing"] } }))).toEqual(["a", "c"]);
      expect(sortedIds(await c.find({ name: { $in: ["bravo", "echo"] } }))).toEqual(["b", "e"]);
      expect(await c.find({ _id: { $in: [] } })).toEqual([]);
    });

    it("when find filters with $or, then it returns documents matching any branch", async () => {
      const c = await seed();
      expect(sortedIds(await c.find({ $or: [{ name: "alpha" }, { n: { $lt: 3 } }] }))).toEqual(["a", "d"]);
      expect(sortedIds(await c.find({ group: "x", $or: [{ n: 5 }, { n: 9 }] }))).toEqual(["a", "c"]);
    });

    it("when find sorts, skips and limits, then it returns that page in that order", async () => {
      const c = await seed();
      expect(ids(await c.find({}, { sort: { n: 1 } }))).toEqual(["d", "b", "a", "e", "c"]);
      expect(ids(await c.find({}, { sort: { n: -1 }, skip: 1, limit: 2 }))).toEqual(["e", "a"]);
      expect(ids(await c.find({ group: "x" }, { sort: { n: 1 }, limit: 2 }))).toEqual(["a", "e"]);
      expect(ids(await c.find({}, { sort: { group: 1, n: -1 } }))).toEqual(["c", "e", "a", "b", "d"]);
      expect(ids(await c.find({}, { sort: { n: 1 }, skip: 10 }))).toEqual([]);
    });

    it("when count is given a filter, then it counts the matching documents", async () => {
      const c = await seed();
      expect(await c.count({})).toBe(5);
      expect(await c.count({ group: "x" })).toBe(3);
      expect(await c.count({ n: { $gte: 5 } })).toBe(3);
      expect(await c.count({ group: "z" })).toBe(0);
    });

    it("when a filter tests an array field for equality, then it matches documents holding that element", async () => {
      const c = coll();
      await c.insertMany([
        { _id: "ab", users: ["a", "b"] },
        { _id: "bc", users: ["b", "c"] },
      ]);
      expect(ids(await c.find({ users: "a" }))).toEqual(["ab"]);
      expect(sortedIds(await c.find({ users: "b" }))).toEqual(["ab", "bc"]);
      expect(await c.find({ users: "z" })).toEqual([]);
      expect(ids(await c.find({ users: { $in: ["c", "z"] } }))).toEqual(["bc"]);
      expect(await c.count({ users: "c" })).toBe(1);
    });
  });

  describe("null, $exists and Dates in filters", () => {
    it("when a map key is tested with $exists false, then only documents without that key match", async () => {
      const c = coll();
      const at = new Date();
      await c.insertMany([
        { _id: "has-u1", members: { u1: { status: "joined", joined_at: at } } },
        { _id: "has-u2", members: { u2: { status: "joined", joined_at: at } } },
        { _id: "empty", members: {} },
      ]);
      expect(sortedIds(await c.find({ "members.u1": { $exists: false } }))).toEqual(["empty", "has-u2"]);
      expect(ids(await c.find({ "members.u1": { $exists: true } }))).toEqual(["has-u1"]);
      expect(await c.count({ _id: "has-u1", "members.u1": { $exists: false } })).toBe(0);
    });

    it("when a filter asks for end_time null, then it matches a stored null and not a stored Date", async () => {
      const c = coll();
      await c.insertMany([
        { _id: "open", end_time: null },
        { _id: "timed", end_time: new Date() },
      ]);
      expect(ids(await c.find({ end_time: null }))).toEqual(["open"]);
    });

    it("when a filter compares Dates with $gt, then only later Dates match", async () => {
      const c = coll();
      const now = new Date();
      await c.insertMany([
        { _id: "past", end_time: new Date(now.getTime() - 60_000) },
        { _id: "now", end_time: new Date(now.getTime()) },
        { _id: "future", end_time: new Date(now.getTime() + 60_000) },
        { _id: "open", end_time: null },
      ]);
      expect(ids(await c.find({ end_time: { $gt: now } }))).toEqual(["future"]);
      expect(sortedIds(await c.find({ end_time: { $gte: now } }))).toEqual(["future", "now"]);
      // NeDB orders null before every Date, so a bare $lt/$lte on a nullable Date also matches a stored null
      // there (not on MongoDB); the portable form excludes null explicitly.
      expect(ids(await c.find({ end_time: { $lt: now, $ne: null } }))).toEqual(["past"]);
      expect(sortedIds(await c.find({ $or: [{ end_time: null }, { end_time: { $gt: now } }] }))).toEqual([
        "future",
        "open",
      ]);
    });
  });

  describe("updates", () => {
    it("when updateOne $sets a dot path into a map and $incs a counter, then both change and the rest stays", async () => {
      const c = coll();
      const at = new Date("2031-05-06T07:08:09.010Z");
      await c.insertOne({
        _id: "r",
        members: { u1: { status: "joined", joined_at: at } },
        members_count: 1,
        name: "r",
      });

      const matched = await c.updateOne(
        { _id: "r" },
        { $set: { "members.u2": { status: "joined", joined_at: at } }, $inc: { members_count: 1, n: 3 } },
      );
      expect(matched).toBe(1);

      const doc = await c.findOne({ _id: "r" });
      expect(Object.keys(doc?.members ?? {}).sort()).toEqual(["u1", "u2"]);
      expect(doc?.members?.u2.joined_at).toBeInstanceOf(Date);
      expect(doc?.members?.u2.joined_at.getTime()).toBe(at.getTime());
      expect(doc?.members_count).toBe(2);
      expect(doc?.n).toBe(3); // $inc on a missing field starts from 0
      expect(doc?.name).toBe("r");
    });

    it("when updateOne matches nothing, then it resolves to 0 and inserts nothing", async () => {
      const c = coll();
      await c.insertOne({ _id: "a", n: 1 });
      expect(await c.updateOne({ _id: "missing" }, { $set: { n: 2 } })).toBe(0);
      expect(await c.find({})).toEqual([{ _id: "a", n: 1 }]);
    });

    it("when updateOne matches several documents, then it changes only one", async () => {
      const c = coll();
      await c.insertMany([
        { _id: "a", group: "x", n: 0 },
        { _id: "b", group: "x", n: 0 },
      ]);
      expect(await c.updateOne({ group: "x" }, { $inc: { n: 1 } })).toBe(1);
      expect(await c.count({ n: 1 })).toBe(1);
    });

    it("when updateOne upserts and nothing matches, then it inserts the filter's fields with the update applied", async () => {
      const c = coll();
      expect(
        await c.updateOne(
          { _id: "k", kind: "counter" },
          { $set: { label: "x" }, $inc: { n: 1 } },
          { upsert: true },
        ),
      ).toBe(1);
      expect(await c.findOne({ _id: "k" })).toEqual({ _id: "k", kind: "counter", label: "x", n: 1 });

      expect(
        await c.updateOne(
          { _id: "k", kind: "counter" },
          { $set: { label: "y" }, $inc: { n: 1 } },
          { upsert: true },
        ),
      ).toBe(1);
      expect(await c.find({})).toEqual([{ _id: "k", kind: "counter", label: "y", n: 2 }]);
    });

    it("when updateMany matches several documents, then it updates them all and counts the matches", async () => {
      const c = coll();
      await c.insertMany([
        { _id: "a", group: "x", flag: false },
        { _id: "b", group: "x", flag: true },
        { _id: "c", group: "x", flag: false },
        { _id: "d", group: "y", flag: false },
      ]);
      // Documents that already hold the value still count (matched, not modified).
      expect(await c.updateMany({ group: "x" }, { $set: { flag: true } })).toBe(3);
      expect(sortedIds(await c.find({ flag: true }))).toEqual(["a", "b", "c"]);
      expect((await c.findOne({ _id: "d" }))?.flag).toBe(false);
      expect(await c.updateMany({ group: "z" }, { $set: { flag: true } })).toBe(0);
    });

    it("when updateMany would repeat a unique value, then it throws DuplicateKeyError", async () => {
      const c = coll();
      await c.createIndex({ fields: ["email"], unique: true });
      await c.insertMany([
        { _id: "a", email: "a@x", group: "g" },
        { _id: "b", email: "b@x", group: "g" },
      ]);
      await expect(c.updateMany({ group: "g" }, { $set: { email: "same@x" } })).rejects.toBeInstanceOf(
        DuplicateKeyError,
      );
    });

    it("when findOneAndUpdate matches, then it returns the document as it is after the update", async () => {
      const c = coll();
      await c.insertOne({ _id: "a", n: 1, name: "a" });
      const after = await c.findOneAndUpdate({ _id: "a", n: 1 }, { $inc: { n: 1 }, $set: { flag: true } });
      expect(after).toEqual({ _id: "a", n: 2, name: "a", flag: true });
      expect(await c.findOne({ _id: "a" })).toEqual(after);
    });

    it("when findOneAndUpdate matches nothing, then it returns null and changes nothing", async () => {
      const c = coll();
      await c.insertOne({ _id: "a", n: 1 });
      await expect(c.findOneAndUpdate({ _id: "a", n: 2 }, { $inc: { n: 1 } })).resolves.toBeNull();
      await expect(c.findOneAndUpdate({ _id: "b" }, { $inc: { n: 1 } })).resolves.toBeNull();
      expect(await c.find({})).toEqual([{ _id: "a", n: 1 }]);
    });

    it("when findOneAndUpdate upserts a counter with $inc, then it yields 1, 2, 3", async () => {
      const c = coll();
      const seqs: number[] = [];
      for (let i = 0; i < 3; i++) {
        const doc = await c.findOneAndUpdate({ _id: "seq" }, { $inc: { seq: 1 } }, { upsert: true });
        expect(doc?._id).toBe("seq");
        seqs.push(doc?.seq ?? -1);
      }
      expect(seqs).toEqual([1, 2, 3]);
      expect(await c.count({})).toBe(1);
    });
  });

  describe("deletes", () => {
    it("when deleteOne matches several documents, then it removes one and resolves to 1", async () => {
      const c = coll();
      await c.insertMany([
        { _id: "a", group: "x" },
        { _id: "b", group: "x" },
        { _id: "c", group: "x" },
        { _id: "d", group: "y" },
      ]);
      expect(await c.deleteOne({ group: "x" })).toBe(1);
      expect(await c.count({ group: "x" })).toBe(2);
      expect(await c.deleteOne({ group: "z" })).toBe(0);
    });

    it("when deleteMany matches, then it removes every match and resolves to their number", async () => {
      const c = coll();
      await c.insertMany([
        { _id: "a", group: "x" },
        { _id: "b", group: "x" },
        { _id: "c", group: "y" },
      ]);
      expect(await c.deleteMany({ group: "x" })).toBe(2);
      expect(ids(await c.find({}))).toEqual(["c"]);
      expect(await c.deleteMany({ group: "x" })).toBe(0);
      expect(await c.deleteMany({})).toBe(1);
      expect(await c.count({})).toBe(0);
    });
  });
});
