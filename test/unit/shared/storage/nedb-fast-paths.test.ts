import Datastore from "@seald-io/nedb";
import fc from "fast-check";
import { useHook } from "../../../../shared/runtime/internals";
import { serializeLine } from "../../../../shared/storage/nedb-fast-paths";
import { nedbIndexUpdateHook, nedbLibs } from "../../../../shared/storage/nedb-internals";

const model = require("@seald-io/nedb/lib/model") as {
  serialize(doc: unknown): string;
  deserialize(line: string): unknown;
};

type Doc = { _id: string; email?: string; group?: number | null; tag?: string; at?: Date; n: number };
type Index = { getMatching(key: unknown): Doc[]; getAll(): Doc[]; sparse: boolean };

// This suite is about the hook itself, whatever INTERNALS_HOOKS_OFF says.
beforeAll(() => expect(useHook(nedbIndexUpdateHook, nedbLibs, { off: [] })).toBe(true));

const keyName = fc.stringMatching(/^[a-z_][a-z0-9_]{0,8}$/);
const leaf = fc.oneof(
  fc.string(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.date({ noInvalidDate: true }),
);
const value = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: "small" }, leaf, tie("array"), tie("object")),
  array: fc.array(tie("value"), { maxLength: 4 }),
  object: fc.dictionary(keyName, tie("value"), { maxKeys: 5 }),
})).object;

describe("serializeLine", () => {
  it("when given any document NeDB accepts, then it writes NeDB's own line, which NeDB reads back", () => {
    fc.assert(
      fc.property(value, (doc) => {
        const line = serializeLine(doc);
        expect(line).toBe(model.serialize(doc));
        expect(model.deserialize(line)).toEqual(model.deserialize(model.serialize(doc)));
      }),
      { numRuns: 500 },
    );
  });
});

const indexesOf = (ds: Datastore<Doc>) => (ds as unknown as { indexes: Record<string, Index> }).indexes;

/** Every document is found, as the very object held, under its key in every index, and nothing else. */
function expectIndexesExact(ds: Datastore<Doc>) {
  const docs = ds.getAllData() as Doc[];
  for (const [field, index] of Object.entries(indexesOf(ds))) {
    const held = docs.filter((d) => !(index.sparse && d[field as keyof Doc] === undefined));
    expect(index.getAll()).toHaveLength(held.length);
    for (const doc of held) expect(index.getMatching(doc[field as keyof Doc])).toContain(doc);
  }
}

const op = fc.oneof(
  fc.record({
    kind: fc.constant("insert" as const),
    id: fc.integer({ min: 0, max: 15 }),
    email: fc.integer({ min: 0, max: 9 }),
    group: fc.option(fc.integer({ min: 0, max: 3 })),
    tag: fc.option(fc.constantFrom("a", "b"), { nil: undefined }),
  }),
  fc.record({
    kind: fc.constant("set" as const),
    group: fc.option(fc.integer({ min: 0, max: 3 })),
    field: fc.constantFrom("email", "group", "tag", "n", "at"),
    to: fc.integer({ min: 0, max: 9 }),
    multi: fc.boolean(),
  }),
  fc.record({ kind: fc.constant("unsetTag" as const), id: fc.integer({ min: 0, max: 15 }) }),
);

async function apply(ds: Datastore<Doc>, o: OpValue) {
  try {
    if (o.kind === "insert") {
      const doc: Doc = { _id: `d${o.id}`, email: `e${o.email}`, group: o.group, n: 0 };
      if (o.tag !== undefined) doc.tag = o.tag;
      await ds.insertAsync(doc);
    } else if (o.kind === "set") {
      const to =
        o.field === "email"
          ? `e${o.to}`
          : o.field === "tag"
            ? `t${o.to % 2}`
            : o.field === "at"
              ? new Date(o.to)
              : o.to;
      await ds.updateAsync({ group: o.group }, { $set: { [o.field]: to } }, { multi: o.multi });
    } else {
      await ds.updateAsync({ _id: `d${o.id}` }, { $unset: { tag: true } }, {});
    }
  } catch (err) {
    expect((err as { errorType?: string }).errorType).toBe("uniqueViolated");
  }
}
type OpValue =
  | { kind: "insert"; id: number; email: number; group: number | null; tag?: string }
  | { kind: "set"; group: number | null; field: string; to: number; multi: boolean }
  | { kind: "unsetTag"; id: number };

describe("the nedb-index-update hook (updateInPlace)", () => {
  it("when any sequence of inserts and updates runs (keys kept, changed, unset, or taken), then every index holds exactly the stored documents", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
        const ds = new Datastore<Doc>({ inMemoryOnly: true });
        await ds.ensureIndexAsync({ fieldName: "email", unique: true });
        await ds.ensureIndexAsync({ fieldName: "group" });
        await ds.ensureIndexAsync({ fieldName: "tag", sparse: true });
        for (const o of ops) await apply(ds, o as OpValue);
        expectIndexesExact(ds);
      }),
      { numRuns: 300 },
    );
  });

  it("when a multi-update fails on a unique key after some documents kept theirs, then nothing changed, in the documents or the indexes", async () => {
    const ds = new Datastore<Doc>({ inMemoryOnly: true });
    await ds.ensureIndexAsync({ fieldName: "email", unique: true });
    await ds.ensureIndexAsync({ fieldName: "group" });
    await ds.insertAsync([
      { _id: "a", email: "x", group: 1, n: 0 },
      { _id: "b", email: "y", group: 1, n: 0 },
      { _id: "c", email: "z", group: 2, n: 0 },
    ]);
    const before = ds.getAllData();
    // "a" keeps its email (swapped in place), "b" takes it: the unique index refuses.
    await expect(
      ds.updateAsync({ group: 1 }, { $set: { email: "x" } }, { multi: true }),
    ).rejects.toMatchObject({
      errorType: "uniqueViolated",
    });
    expect(ds.getAllData()).toEqual(before);
    for (const [i, doc] of ds.getAllData().entries()) expect(doc).toBe(before[i]);
    expectIndexesExact(ds);
    expect(await ds.findAsync({ email: "x" })).toEqual([{ _id: "a", email: "x", group: 1, n: 0 }]);
  });
});
