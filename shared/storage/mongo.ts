/**
 * The MongoDB engine, connected through mongoose. Repositories already speak MongoDB's filter and update
 * documents, so this engine hands them to the driver collections of the mongoose connection unchanged
 * (no mongoose schema casting in between, which would make the two engines disagree).
 */
import mongoose from "mongoose";
import {
  DuplicateKeyError,
  type Collection,
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

function rethrow(err: unknown): never {
  if (err && typeof err === "object" && (err as { code?: number }).code === 11000) {
    throw new DuplicateKeyError((err as Error).message);
  }
  throw err;
}

class MongoCollection<T extends Doc> implements Collection<T> {
  constructor(private readonly coll: DriverCollection) {}

  async insertOne(doc: T): Promise<T> {
    try {
      await this.coll.insertOne({ ...doc } as never);
      return doc;
    } catch (err) {
      rethrow(err);
    }
  }

  async insertMany(docs: T[]): Promise<void> {
    if (docs.length === 0) return;
    try {
      await this.coll.insertMany(docs.map((d) => ({ ...d })) as never[], { ordered: true });
    } catch (err) {
      rethrow(err);
    }
  }

  async findOne(filter: Filter): Promise<T | null> {
    return (await this.coll.findOne(filter as never)) as T | null;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    let cursor = this.coll.find(filter as never);
    if (options.sort) cursor = cursor.sort(options.sort);
    if (options.skip) cursor = cursor.skip(options.skip);
    if (options.limit) cursor = cursor.limit(options.limit);
    return (await cursor.toArray()) as unknown as T[];
  }

  count(filter: Filter): Promise<number> {
    return this.coll.countDocuments(filter as never);
  }

  async updateOne(filter: Filter, update: Update, options: { upsert?: boolean } = {}): Promise<number> {
    try {
      const res = await this.coll.updateOne(filter as never, update as never, {
        upsert: options.upsert ?? false,
      });
      return res.matchedCount + res.upsertedCount;
    } catch (err) {
      rethrow(err);
    }
  }

  async updateMany(filter: Filter, update: Update): Promise<number> {
    try {
      const res = await this.coll.updateMany(filter as never, update as never);
      return res.matchedCount;
    } catch (err) {
      rethrow(err);
    }
  }

  async findOneAndUpdate(
    filter: Filter,
    update: Update,
    options: { upsert?: boolean } = {},
  ): Promise<T | null> {
    try {
      const doc = await this.coll.findOneAndUpdate(filter as never, update as never, {
        upsert: options.upsert ?? false,
        returnDocument: "after",
      });
      return (doc as unknown as T) ?? null;
    } catch (err) {
      rethrow(err);
    }
  }

  async deleteOne(filter: Filter): Promise<number> {
    return (await this.coll.deleteOne(filter as never)).deletedCount;
  }

  async deleteMany(filter: Filter): Promise<number> {
    return (await this.coll.deleteMany(filter as never)).deletedCount;
  }

  async createIndex(spec: IndexSpec): Promise<void> {
    const keys = Object.fromEntries(spec.fields.map((f) => [f, 1 as const]));
    const options = { unique: spec.unique ?? false, sparse: spec.sparse ?? false };
    try {
      await this.coll.createIndex(keys, options);
    } catch (err) {
      // The same keys indexed with other options (an older release): replace that index.
      if ((err as { code?: number }).code !== INDEX_OPTIONS_CONFLICT) throw err;
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

  private constructor(private readonly conn: mongoose.Connection) {}

  static async connect(uri: string): Promise<MongoStore> {
    const conn = await mongoose.createConnection(uri, { serverSelectionTimeoutMS: 10_000 }).asPromise();
    return new MongoStore(conn);
  }

  collection<T extends Doc>(name: string): Collection<T> {
    if (!this.conn.db) throw new Error("MongoDB connection is not open");
    return new MongoCollection<T>(this.conn.db.collection(name));
  }

  async ping(): Promise<void> {
    if (!this.conn.db) throw new Error("MongoDB connection is not open");
    await this.conn.db.admin().ping();
  }

  async close(): Promise<void> {
    await this.conn.close();
  }
}
