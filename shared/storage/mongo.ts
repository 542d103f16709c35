/**
 * The MongoDB engine, connected through mongoose. Repositories already speak MongoDB's filter and update
 * documents, so this engine hands them to the driver collections of the mongoose connection unchanged
 * (no mongoose schema casting in between, which would make the two engines disagree).
 */
import mongoose from "mongoose";
import { StoreUnavailableError, type StoreWriteReason } from "../errors";
import { quietWatch, WriteHealth, type StoreWatch } from "./write-failures";
import {
  DuplicateKeyError,
  type Collection,
  type DeepReadonly,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type Store,
  type Update,
} from "./port";

/** MongoDB's error code for an index that exists with the same keys and other options. */
const INDEX_OPTIONS_CONFLICT = 85;

type Doc = { _id: string | number };
type DriverCollection = mongoose.mongo.Collection<mongoose.mongo.Document>;

/**
 * Server error codes of a replica set without a usable primary: not (or no longer) primary, stepping
 * down, shutting down, unreachable. What an election in the middle of an operation looks like.
 */
const NO_PRIMARY_CODES = new Set([6, 7, 89, 91, 189, 9001, 10107, 11600, 11602, 13435, 13436]);

/**
 * True for failures that say "no primary right now" rather than "this operation is wrong". They reach
 * us only once the driver's own retry (retryable writes and reads, after waiting up to
 * serverSelectionTimeoutMS for a primary) has failed too.
 */
export function isStoreUnavailable(err: unknown): boolean {
  const m = mongoose.mongo;
  if (
    err instanceof m.MongoNetworkError ||
    err instanceof m.MongoServerSelectionError ||
    err instanceof m.MongoNotConnectedError ||
    err instanceof m.MongoTopologyClosedError
  ) {
    return true;
  }
  if (!(err instanceof m.MongoError)) return false;
  return (
    err.hasErrorLabel("RetryableWriteError") ||
    (typeof err.code === "number" && NO_PRIMARY_CODES.has(err.code))
  );
}

/** The driver's error in the port's terms: a duplicate key, a store that is unavailable now, or as is. */
export function storeError(err: unknown): unknown {
  if (err && typeof err === "object" && (err as { code?: number }).code === 11000) {
    return new DuplicateKeyError((err as Error).message);
  }
  if (isStoreUnavailable(err)) return new StoreUnavailableError(err);
  return err;
}

/**
 * MongoDB refusing a write for want of storage, the counterpart of the embedded engine's ENOSPC, EDQUOT,
 * EACCES: its disk is full (OutOfDiskSpace), a hosted database is over its quota (Atlas answers
 * AtlasError, "over your space quota"), this user may not write (Unauthorized: what a managed
 * service's "disk full, writes blocked" looks like), or the write concern could not be satisfied (MONGO_URI's,
 * e.g. `journal=true`). "No primary" is StoreUnavailable (503) instead, a duplicate key a domain
 * outcome, and anything else (a malformed update) a fault of ours: 500, logged
 * (docs/decisions/0079-store-write-errors.md).
 */
export function mongoWriteFailure(err: unknown): { code: string; reason: StoreWriteReason } | null {
  const m = mongoose.mongo;
  if (!(err instanceof m.MongoError) || isStoreUnavailable(err)) return null;
  const code = typeof err.code === "number" ? err.code : undefined;
  const name = (err as { codeName?: unknown }).codeName;
  const label = typeof name === "string" && name ? name : String(code ?? err.name);
  if (err instanceof m.MongoWriteConcernError || (code !== undefined && WRITE_CONCERN_CODES.has(code))) {
    return { code: label, reason: "unwritable" };
  }
  if (code === OUT_OF_DISK_SPACE) return { code: label, reason: "full" };
  if (code === ATLAS_ERROR && /quota/i.test(err.message)) return { code: label, reason: "full" };
  if (code === UNAUTHORIZED) return { code: label, reason: "unwritable" };
  return null;
}

const OUT_OF_DISK_SPACE = 14031;
const ATLAS_ERROR = 8000;
const UNAUTHORIZED = 13;
/** WriteConcernFailed (a wtimeout), UnknownReplWriteConcern, UnsatisfiableWriteConcern. */
const WRITE_CONCERN_CODES = new Set([64, 79, 100]);

/**
 * The driver's options. The write concern is MONGO_URI's own (`w=majority`, `journal=true`): where the
 * database lives decides what an acknowledged write must outlive, and one place says it.
 */
/** MONGO_USER and MONGO_PASSWORD: kept out of MONGO_URI, which may be logged (shared/config). */
export interface MongoCredentials {
  mongoUser: string;
  mongoPassword: string;
}

export function connectionOptions(auth?: MongoCredentials): mongoose.ConnectOptions {
  return {
    serverSelectionTimeoutMS: 10_000,
    ...(auth?.mongoUser ? { auth: { username: auth.mongoUser, password: auth.mongoPassword } } : {}),
  };
}

class MongoCollection<T extends Doc> implements Collection<T> {
  private readonly health: WriteHealth;

  constructor(
    private readonly coll: DriverCollection,
    watch: StoreWatch,
  ) {
    this.health = new WriteHealth(coll.collectionName, coll.namespace, watch);
  }

  /** A write: its storage failures become StoreWriteError (counted and logged once, see WriteHealth). */
  private async write<R>(op: () => Promise<R>): Promise<R> {
    let result: R;
    try {
      result = await op();
    } catch (err) {
      const failure = mongoWriteFailure(err);
      throw failure ? this.health.failed(failure.code, failure.reason, err) : storeError(err);
    }
    this.health.succeeded();
    return result;
  }

  private async read<R>(op: () => Promise<R>): Promise<R> {
    try {
      return await op();
    } catch (err) {
      throw storeError(err);
    }
  }

  async insertOne(doc: T): Promise<T> {
    await this.write(() => this.coll.insertOne({ ...doc } as never));
    return doc;
  }

  async insertMany(docs: T[]): Promise<void> {
    if (docs.length === 0) return;
    await this.write(() => this.coll.insertMany(docs.map((d) => ({ ...d })) as never[], { ordered: true }));
  }

  findOne(filter: Filter): Promise<T | null> {
    return this.read(async () => (await this.coll.findOne(filter as never)) as T | null);
  }

  readById(id: T["_id"]): Promise<DeepReadonly<T> | null> {
    return this.findOne({ _id: id }) as Promise<DeepReadonly<T> | null>;
  }

  find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    let cursor = this.coll.find(filter as never);
    if (options.sort) cursor = cursor.sort(options.sort);
    if (options.skip) cursor = cursor.skip(options.skip);
    if (options.limit) cursor = cursor.limit(options.limit);
    return this.read(async () => (await cursor.toArray()) as unknown as T[]);
  }

  count(filter: Filter): Promise<number> {
    return this.read(() => this.coll.countDocuments(filter as never));
  }

  async updateOne(filter: Filter, update: Update, options: { upsert?: boolean } = {}): Promise<number> {
    const res = await this.write(() =>
      this.coll.updateOne(filter as never, update as never, { upsert: options.upsert ?? false }),
    );
    return res.matchedCount + res.upsertedCount;
  }

  async updateMany(filter: Filter, update: Update): Promise<number> {
    return (await this.write(() => this.coll.updateMany(filter as never, update as never))).matchedCount;
  }

  async findOneAndUpdate(
    filter: Filter,
    update: Update,
    options: { upsert?: boolean } = {},
  ): Promise<T | null> {
    const doc = await this.write(() =>
      this.coll.findOneAndUpdate(filter as never, update as never, {
        upsert: options.upsert ?? false,
        returnDocument: "after",
      }),
    );
    return (doc as unknown as T) ?? null;
  }

  async deleteOne(filter: Filter): Promise<number> {
    return (await this.write(() => this.coll.deleteOne(filter as never))).deletedCount;
  }

  async deleteMany(filter: Filter): Promise<number> {
    return (await this.write(() => this.coll.deleteMany(filter as never))).deletedCount;
  }

  async createIndex(spec: IndexSpec): Promise<void> {
    const keys = Object.fromEntries(spec.fields.map((f) => [f, 1 as const]));
    const options = {
      unique: spec.unique ?? false,
      sparse: spec.sparse ?? false,
      ...(spec.expireAfterSeconds === undefined ? {} : { expireAfterSeconds: spec.expireAfterSeconds }),
    };
    try {
      await this.coll.createIndex(keys, options);
    } catch (err) {
      // The same keys indexed with other options (an older release): replace that index.
      if ((err as { code?: number }).code !== INDEX_OPTIONS_CONFLICT) throw storeError(err);
      await this.coll.dropIndex(
        Object.entries(keys)
          .map(([f, d]) => `${f}_${d}`)
          .join("_"),
      );
      await this.coll.createIndex(keys, options);
    }
  }
}

export class MongoStore implements Store {
  readonly engine = "mongodb" as const;

  private constructor(
    private readonly conn: mongoose.Connection,
    private readonly watch: StoreWatch,
  ) {}

  /**
   * `options.watch` hears of failed writes (shared/runtime/store-watch).
   */
  static async connect(
    uri: string,
    options: { watch?: StoreWatch; auth?: MongoCredentials } = {},
  ): Promise<MongoStore> {
    const conn = await mongoose.createConnection(uri, connectionOptions(options.auth)).asPromise();
    return new MongoStore(conn, options.watch ?? quietWatch);
  }

  collection<T extends Doc>(name: string): Collection<T> {
    if (!this.conn.db) throw new Error("MongoDB connection is not open");
    return new MongoCollection<T>(this.conn.db.collection(name), this.watch);
  }

  /** A GridFS bucket on this connection (the stores' pictures: services/stores/gridfs-blob-store.ts). */
  gridFsBucket(bucketName: string): mongoose.mongo.GridFSBucket {
    if (!this.conn.db) throw new Error("MongoDB connection is not open");
    return new mongoose.mongo.GridFSBucket(this.conn.db, { bucketName });
  }

  async ping(): Promise<void> {
    if (!this.conn.db) throw new Error("MongoDB connection is not open");
    await this.conn.db.admin().ping();
  }

  async close(): Promise<void> {
    await this.conn.close();
  }
}
