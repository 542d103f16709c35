/**
 * Every use the embedded engine makes of what NeDB does not document (its `lib/` modules, a datastore's
 * `persistence`, `executor` and `indexes`), each a hook guarded by shared/runtime/internals: applied
 * only to the NeDB releases it was written for and when what it touches is there, else NeDB's own way
 * with one warning. What each gains: docs/decisions/0103-internals-hooks-guard.md.
 *
 * - nedb-index-update: an index update that keeps its key swaps the document in place (nedb-fast-paths).
 * - nedb-group-commit: a datastore's appends go through NedbDataFile (one write per turn of the loop),
 *   which writes what waits before a compaction, and after a failed write rebuilds memory from the file.
 * - nedb-read-by-id: `readById` takes the kept document from the `_id` index, in NeDB's queue; else
 *   `findOne` (a copy).
 * - nedb-serialize: NeDB's line serialiser gives way to serializeLine (the same lines), so that a
 *   compaction, which serialises every document of a collection while the collection waits, costs
 *   what an append costs per document.
 */
import type Datastore from "@seald-io/nedb";
import {
  isWrapped,
  missingFunctions,
  originalOf,
  unwrap,
  useHook,
  wrap,
  type HookName,
  type HookSettings,
  type InternalsHook,
} from "../runtime/internals";
import { serializeLine, updateInPlace, type NedbIndex, type NedbModel } from "./nedb-fast-paths";
import { lineOf, makeLinesAhead } from "./nedb-lines-ahead";

const NEDB_VERSIONS = ">=4.1.0 <5.0.0";

/** One of NeDB's own modules (no typings, no exports), or `{}` if this release has none of that name. */
function nedbLib(name: string): unknown {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(`@seald-io/nedb/lib/${name}`) as unknown;
  } catch {
    return {};
  }
}

/** NeDB's index class and the model functions it compares keys with. */
export interface NedbLib {
  Index: { prototype: NedbIndex } & (new (options: { fieldName: string; sparse?: boolean }) => NedbIndex & {
    insert(doc: unknown): void;
  });
  model: NedbModel & { serialize(doc: unknown): string; deserialize(line: string): unknown };
}

export const nedbLibs = { Index: nedbLib("indexes"), model: nedbLib("model") } as unknown as NedbLib;

/** What the swap needs: the model's functions, and an index's fields, sparseness and tree nodes. */
function indexUpdateNeeds(lib: NedbLib): string[] {
  const missing = [
    ...missingFunctions(lib.model, "lib/model", ["compareThings", "getDotValue"]),
    ...missingFunctions(lib.Index?.prototype, "lib/indexes Index.prototype", ["update", "insert"]),
  ];
  if (missing.length > 0 || typeof lib.Index !== "function")
    return missing.length > 0 ? missing : ["lib/indexes"];
  // One small index, built as NeDB builds them, must hold a document where the swap looks for it.
  const index = new lib.Index({ fieldName: "k", sparse: true });
  const doc = { _id: "x", k: 1 };
  index.insert(doc);
  const root = index.tree?.tree;
  if (!Array.isArray(index._fields) || index._fields[0] !== "k") missing.push("Index._fields");
  if (index.sparse !== true) missing.push("Index.sparse");
  const isNode = root && root.key === 1 && Array.isArray(root.data) && root.data[0] === doc;
  if (!isNode || !("left" in root) || !("right" in root)) {
    missing.push("Index.tree.tree nodes with key, data, left and right");
  }
  return missing;
}

export const nedbIndexUpdateHook: InternalsHook<NedbLib> = {
  name: "nedb-index-update",
  library: "@seald-io/nedb",
  versions: NEDB_VERSIONS,
  check: indexUpdateNeeds,
  apply(lib) {
    wrap(lib.Index.prototype, "update", (nedbUpdate) => updateInPlace(lib.model, nedbUpdate));
  },
  remove(lib) {
    unwrap(lib.Index.prototype, "update");
  },
};

/** The parts of a datastore's `persistence` (and of its datastore, `db`) the group commit uses. */
export interface NedbPersistence {
  inMemoryOnly: boolean;
  filename: string;
  modes: { fileMode: number };
  persistNewStateAsync(docs: unknown[]): Promise<void>;
  /** Compaction: memory written out as a new file. */
  persistCachedDatabaseAsync(): Promise<void>;
  /** Every index emptied, then filled with `docs`: how memory is rebuilt from the file. */
  db: { _resetIndexes(docs?: unknown[]): void; getAllData(): object[] };
}

/** Where a datastore's appends go instead of NeDB's `fs.appendFile` (a NedbDataFile). */
export interface Appender {
  append(docs: unknown[]): void;
  /** Runs in NeDB's queue before a compaction writes memory out; throwing stops the compaction. */
  beforeCompaction(): void;
}

const sampleDoc = { _id: "x", at: new Date(0), list: [1, "a", null, { n: true }] };
/** The line NeDB's compaction writes for each index but `_id`. */
const sampleIndexLine = { $$indexCreated: { fieldName: "k", unique: false, sparse: true } };

/** What differs between NeDB's own line format (its serialiser, even if replaced) and serializeLine. */
function lineFormatMissing(model: Partial<NedbLib["model"]> | undefined): string[] {
  const missing: string[] = [];
  const serialize = originalOf(model?.serialize);
  const deserialize = model?.deserialize;
  const same = (doc: unknown) => serialize?.(doc) === serializeLine(doc);
  if (typeof serialize !== "function" || !same(sampleDoc) || !same(sampleIndexLine)) {
    missing.push("lib/model serialize() writing the lines serializeLine writes");
  }
  if (
    typeof deserialize !== "function" ||
    JSON.stringify(deserialize(serializeLine(sampleDoc))) !== JSON.stringify(sampleDoc)
  ) {
    missing.push("lib/model deserialize() reading those lines back");
  }
  return missing;
}

/**
 * NeDB's `model.serialize`, which its persistence calls for every line it writes (a compaction: every
 * document of the collection, while the collection's operations wait), replaced process-wide by
 * serializeLine: the same line, without `JSON.stringify`'s replacer called for every key and value
 * (about a quarter of the time: docs/decisions/0078-nedb-compaction-while-running.md). NeDB checked
 * every key when the document was inserted or modified, which is all its replacer checks again.
 */
export const nedbSerializeHook: InternalsHook<NedbLib> = {
  name: "nedb-serialize",
  library: "@seald-io/nedb",
  versions: NEDB_VERSIONS,
  check: (lib) => lineFormatMissing(lib.model),
  apply(lib) {
    wrap(lib.model, "serialize", () => (doc: unknown) => lineOf(doc));
  },
  remove(lib) {
    unwrap(lib.model, "serialize");
  },
};

/**
 * NeDB's documented `compactDatafileAsync`, with the collection's lines made ahead before the compaction
 * takes the collection's queue, while operations go on (nedb-lines-ahead), when nedb-serialize is in
 * place to take them; inside the queue only the documents written meanwhile are left to make. `docs`:
 * the collection's documents when the caller has just taken them; `beforeQueue`: what else to do
 * before the compaction takes the queue, while operations go on. Resolves to how long the collection's
 * operations waited: from asking NeDB to compact until it was done.
 */
export async function compactDatafile<T>(
  ds: Datastore<T>,
  docs: readonly object[] = ds.getAllData(),
  beforeQueue: () => Promise<unknown> = () => Promise.resolve(),
): Promise<number> {
  const forget = isWrapped(nedbLibs.model.serialize) ? await makeLinesAhead(docs) : undefined;
  try {
    await beforeQueue();
    const asked = performance.now();
    await ds.compactDatafileAsync();
    return performance.now() - asked;
  } finally {
    forget?.();
  }
}

/** The group commit, per datastore: its `persistence` appends through `appender`. */
export function nedbGroupCommitHook(appender: Appender): InternalsHook<NedbPersistence> {
  return {
    name: "nedb-group-commit",
    library: "@seald-io/nedb",
    versions: NEDB_VERSIONS,
    check(p) {
      const missing = [
        ...missingFunctions(p, "persistence", ["persistNewStateAsync", "persistCachedDatabaseAsync"]),
        ...missingFunctions(p?.db, "persistence.db", ["_resetIndexes", "getAllData"]),
      ];
      if (typeof p?.filename !== "string") missing.push("persistence.filename");
      if (typeof p?.modes?.fileMode !== "number") missing.push("persistence.modes.fileMode");
      // The lines must stay those NeDB writes and reads back.
      return [...missing, ...lineFormatMissing(nedbLibs.model)];
    },
    apply(p) {
      wrap(p, "persistNewStateAsync", () => async (docs: unknown[]) => appender.append(docs));
      wrap(
        p,
        "persistCachedDatabaseAsync",
        (compact) =>
          async function (this: NedbPersistence): Promise<void> {
            appender.beforeCompaction();
            // Only the serialiser of nedb-serialize takes lines made ahead: without it, none are made.
            const forget = isWrapped(nedbLibs.model.serialize)
              ? await makeLinesAhead(this.db.getAllData())
              : undefined;
            try {
              await compact.call(this);
            } finally {
              forget?.();
            }
          },
      );
    },
    remove(p) {
      unwrap(p, "persistNewStateAsync");
      unwrap(p, "persistCachedDatabaseAsync");
    },
  };
}

/** The parts of a datastore `readById` reads. */
export interface NedbDatastoreInternals {
  executor?: { pushAsync?: unknown };
  indexes?: { _id?: { getMatching?: unknown } };
}

/** A hook that changes nothing in NeDB: the engine takes a faster path where it may, per datastore. */
function pathHook(
  name: HookName,
  check: (ds: NedbDatastoreInternals) => string[],
): InternalsHook<NedbDatastoreInternals> & { on(ds: object): boolean } {
  const taken = new WeakSet<object>();
  return {
    name,
    library: "@seald-io/nedb",
    versions: NEDB_VERSIONS,
    check,
    apply: (ds) => void taken.add(ds),
    remove: (ds) => void taken.delete(ds),
    on: (ds) => taken.has(ds),
  };
}

export const nedbReadByIdHook = pathHook("nedb-read-by-id", (ds) => [
  ...missingFunctions(ds.executor, "datastore.executor", ["pushAsync"]),
  ...missingFunctions(ds.indexes?._id, "datastore.indexes._id", ["getMatching"]),
]);

/**
 * The hooks of one datastore: the process-wide index update and serialiser (the first store of a
 * process decides), and per datastore the group commit (files only) and the read path.
 */
export function hookDatastore(
  ds: Datastore<never>,
  appender: Appender,
  settings: HookSettings,
): { groupCommit: boolean; readById: boolean } {
  useHook(nedbIndexUpdateHook, nedbLibs, settings);
  useHook(nedbSerializeHook, nedbLibs, settings);
  const internals = ds as unknown as NedbDatastoreInternals & { persistence: NedbPersistence };
  const persistence = internals.persistence;
  return {
    groupCommit:
      !!persistence &&
      !persistence.inMemoryOnly &&
      useHook(nedbGroupCommitHook(appender), persistence, settings),
    readById: useHook(nedbReadByIdHook, internals, settings),
  };
}
