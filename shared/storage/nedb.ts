/**
 * The embedded engine: one NeDB datastore (one append-only file) per collection under DATA_DIR, or in
 * memory for tests. NeDB serialises every operation of a datastore, so a conditional update is atomic.
 * The files are single-process: a lock file stops a second process (a CLI while the server runs) from
 * opening the same folder and corrupting it.
 */
import fs from "node:fs";
import path from "node:path";
import Datastore from "@seald-io/nedb";
import {
  DuplicateKeyError,
  type Collection,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type Store,
  type Update,
} from "./port";
import { serializeLine, updateIndexesInPlace } from "./nedb-fast-paths";

type Doc = { _id: string | number };


updateIndexesInPlace();

interface NedbPersistence {
  inMemoryOnly: boolean;
  filename: string;
  modes: { fileMode: number };
  afterSerialization(line: string): Promise<string>;
  persistNewStateAsync(docs: unknown[]): Promise<void>;
}

/**
 * NeDB appends every write to its file with `fs.appendFile`: open, write and close, each a trip to the
 * thread pool (a quarter of a token refresh's time went there). This keeps the file open and appends
 * with one synchronous write instead: the bytes reach the kernel before the operation resolves, as
 * before (a killed process loses nothing it answered), in a few microseconds. Compaction replaces the
 * file (write elsewhere, rename), so the descriptor is dropped then and the next write opens the new one.
 * Returns what closes the descriptor.
 */
function appendThroughOpenFile(ds: Datastore<Doc>): () => void {
  const persistence = (ds as unknown as { persistence: NedbPersistence }).persistence;
  let fd: number | null = null;
  const release = () => {
    if (fd !== null) fs.closeSync(fd);
    fd = null;
  };
  if (persistence.inMemoryOnly) return release;
  ds.on("compaction.done", release);
  persistence.persistNewStateAsync = async (docs: unknown[]) => {
    let lines = "";
    for (const doc of docs) lines += `${await persistence.afterSerialization(serializeLine(doc))}\n`;
    if (lines.length === 0) return;
    fd ??= fs.openSync(persistence.filename, "a", persistence.modes.fileMode);
    const bytes = Buffer.from(lines, "utf8");
    for (let written = 0; written < bytes.length;) {
      written += fs.writeSync(fd, bytes, written, bytes.length - written);
    }
  };
  return release;
}

function rethrow(err: unknown): never {
  if (err && typeof err === "object" && (err as { errorType?: string }).errorType === "uniqueViolated") {
    throw new DuplicateKeyError((err as Error).message);
  }
  throw err;
}

class NedbCollection<T extends Doc> implements Collection<T> {
  private readonly closeFile: () => void;

  constructor(private readonly ds: Datastore<T>) {
    this.closeFile = appendThroughOpenFile(ds as unknown as Datastore<Doc>);
  }

  async insertOne(doc: T): Promise<T> {
    try {
      return (await this.ds.insertAsync(doc)) as T;
    } catch (err) {
      rethrow(err);
    }
  }

  async insertMany(docs: T[]): Promise<void> {
    if (docs.length === 0) return;
    try {
      await this.ds.insertAsync(docs);
    } catch (err) {
      rethrow(err);
    }
  }

  async findOne(filter: Filter): Promise<T | null> {
    return (await this.ds.findOneAsync(filter as never)) as T | null;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    let cursor = this.ds.findAsync(filter as never);
    if (options.sort) cursor = cursor.sort(options.sort);
    if (options.skip) cursor = cursor.skip(options.skip);
    if (options.limit) cursor = cursor.limit(options.limit);
    return (await cursor) as T[];
  }

  async count(filter: Filter): Promise<number> {
    // countAsync returns a lazy cursor; awaiting it here runs the query exactly once.
    return (await this.ds.countAsync(filter as never)) as number;
  }

  async updateOne(filter: Filter, update: Update, options: { upsert?: boolean } = {}): Promise<number> {
    try {
      const res = await this.ds.updateAsync(filter as never, update as never, {
        upsert: options.upsert ?? false,
      });
      return res.numAffected;
    } catch (err) {
      rethrow(err);
    }
  }

  async updateMany(filter: Filter, update: Update): Promise<number> {
    try {
      const res = await this.ds.updateAsync(filter as never, update as never, { multi: true });
      return res.numAffected;
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
      const res = await this.ds.updateAsync(filter as never, update as never, {
        upsert: options.upsert ?? false,
        returnUpdatedDocs: true,
      });
      return res.numAffected === 0 ? null : ((res.affectedDocuments as unknown as T) ?? null);
    } catch (err) {
      rethrow(err);
    }
  }

  deleteOne(filter: Filter): Promise<number> {
    return this.ds.removeAsync(filter as never, { multi: false });
  }

  deleteMany(filter: Filter): Promise<number> {
    return this.ds.removeAsync(filter as never, { multi: true });
  }

  async createIndex(spec: IndexSpec): Promise<void> {
    const fieldName = spec.fields.length === 1 ? spec.fields[0] : spec.fields;
    const unique = spec.unique ?? false;
    const sparse = spec.sparse ?? false;
    // NeDB keeps index definitions in its file and ignores a second ensureIndex for the same field:
    // one made with other options (an older release) is replaced, or the new ones would never apply.
    const existing = (this.ds as unknown as { indexes: Record<string, { unique: boolean; sparse: boolean }> })
      .indexes[fieldName.toString()];
    if (existing && (existing.unique !== unique || existing.sparse !== sparse)) {
      await this.ds.removeIndexAsync(fieldName as string);
    }
    await this.ds.ensureIndexAsync({ fieldName, unique, sparse });
  }

  compact(): Promise<void> {
    return this.ds.compactDatafileAsync();
  }

  /** Compacts the file (NeDB appends every change) and lets go of it. */
  async close(): Promise<void> {
    await this.compact().catch(() => undefined);
    this.closeFile();
  }
}

const pidAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
};

/** Folders this process holds, with how many stores hold each (a lock is released with the last). */
const held = new Map<string, number>();

const lockFile = (dir: string): string => path.join(dir, ".lock");

/**
 * Takes the folder for this process. A lock of a live other process refuses; a stale lock of a dead
 * process is taken over (re-read just before removal, so a fresh lock of a racing process survives).
 */
export function acquireLock(dir: string): void {
  const count = held.get(dir) ?? 0;
  if (count > 0) {
    held.set(dir, count + 1);
    return;
  }
  fs.mkdirSync(dir, { recursive: true });
  const file = lockFile(dir);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: "wx" });
      held.set(dir, 1);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const content = fs.readFileSync(file, "utf8");
    const owner = Number(content);
    if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && pidAlive(owner)) {
      throw new Error(
        `The embedded store in ${dir} is in use by process ${owner}; stop it first (the embedded store is single-process).`,
      );
    }
    if (fs.existsSync(file) && fs.readFileSync(file, "utf8") === content) fs.rmSync(file, { force: true });
  }
  throw new Error(`Could not lock ${dir}`);
}

export function releaseLock(dir: string): void {
  const count = held.get(dir) ?? 0;
  if (count > 1) {
    held.set(dir, count - 1);
    return;
  }
  held.delete(dir);
  const file = lockFile(dir);
  if (fs.existsSync(file) && fs.readFileSync(file, "utf8") === String(process.pid))
    fs.rmSync(file, { force: true });
}

export class NedbStore implements Store {
  readonly engine = "nedb" as const;
  private readonly collections = new Map<string, NedbCollection<Doc>>();

  /** `dir` null keeps every collection in memory. */
  constructor(private readonly dir: string | null) {
    if (dir) acquireLock(dir);
  }

  collection<T extends Doc>(name: string): Collection<T> {
    let coll = this.collections.get(name);
    if (!coll) {
      const ds = this.dir
        ? new Datastore<Doc>({ filename: path.join(this.dir, `${name}.db`), autoload: true })
        : new Datastore<Doc>({ inMemoryOnly: true });
      coll = new NedbCollection<Doc>(ds);
      this.collections.set(name, coll);
    }
    return coll as unknown as Collection<T>;
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    if (this.dir) {
      // NeDB appends every change; compacting on close keeps the files as small as the data.
      await Promise.all([...this.collections.values()].map((c) => c.close()));
    }
    this.collections.clear();
    if (this.dir) releaseLock(this.dir);
  }
}
