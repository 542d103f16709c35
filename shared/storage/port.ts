/**
 * The storage port. Repositories are written once against it, in MongoDB filter and update documents;
 * two engines implement it: MongoDB through mongoose (mongo.ts) and the embedded @seald-io/nedb (nedb.ts).
 * Only the operators both engines treat alike belong in repositories; the storage contract suite
 * (test/storage) is the proof. Known gaps, which repositories must stay clear of:
 * - NeDB has no `$expr`, and no multi-process access (see nedb.ts).
 * - `$ne`/`$nin` on an array field mean "some element differs" in NeDB but "no element equals" in
 *   MongoDB, so membership is modelled as a map keyed by id and tested with `$exists`.
 * - `$lt`/`$lte` on a Date also match a stored null in NeDB (null sorts first), not in MongoDB: add
 *   `$ne: null` to such ranges.
 * - `{field: null}` matches a missing field in MongoDB but not in NeDB: always write such fields.
 * - A duplicate in `insertMany` writes nothing in NeDB but keeps the earlier documents in MongoDB.
 */
export type Filter = Record<string, unknown>;
/** A document as `readById` hands it out: nothing in it may be changed. */
export type DeepReadonly<T> = T extends Date
  ? Readonly<Date>
  : T extends (infer E)[]
    ? readonly DeepReadonly<E>[]
    : T extends object
      ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
      : T;
export type Update = Record<string, unknown>;
export type SortSpec = Record<string, 1 | -1>;

export interface FindOptions {
  sort?: SortSpec;
  skip?: number;
  limit?: number;
}

export interface IndexSpec {
  fields: string[];
  unique?: boolean;
  /** Documents without the field are left out of the index (and of queries that use it). */
  sparse?: boolean;
  /**
   * MongoDB only: a TTL index on a date field; MongoDB deletes a document about a minute after its date
   * plus this many seconds (0: at the date itself). The embedded engine ignores it: whoever sets one
   * also sweeps the same documents itself.
   */
  expireAfterSeconds?: number;
}

export interface Collection<T extends { _id: string | number }> {
  insertOne(doc: T): Promise<T>;
  insertMany(docs: T[]): Promise<void>;
  findOne(filter: Filter): Promise<T | null>;
  /**
   * The document with this `_id`, or null, for reading only: an engine may hand out an object it keeps
   * or caches, so the caller must not change it.
   */
  readById(id: T["_id"]): Promise<DeepReadonly<T> | null>;
  find(filter: Filter, options?: FindOptions): Promise<T[]>;
  count(filter: Filter): Promise<number>;
  /** Applies `update` to the first match; resolves to the number of documents matched (0 or 1). */
  updateOne(filter: Filter, update: Update, options?: { upsert?: boolean }): Promise<number>;
  updateMany(filter: Filter, update: Update): Promise<number>;
  /** Atomically updates the first match and returns it as it is after the update, or null when none matched. */
  findOneAndUpdate(filter: Filter, update: Update, options?: { upsert?: boolean }): Promise<T | null>;
  deleteOne(filter: Filter): Promise<number>;
  deleteMany(filter: Filter): Promise<number>;
  createIndex(spec: IndexSpec): Promise<void>;
}

export interface Store {
  readonly engine: "nedb" | "mongodb";
  collection<T extends { _id: string | number }>(name: string): Collection<T>;
  /** Resolves when the store answers; rejects otherwise (readiness checks). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** A unique index (or `_id`) refused an insert or upsert. Repositories turn it into a domain outcome. */
export class DuplicateKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DuplicateKeyError";
  }
}
