/**
 * The embedded engine: one NeDB datastore (one append-only file) per collection under DATA_DIR, or in
 * memory for tests, used through NeDB's documented API only. NeDB compacts a file when it loads it, so
 * at every start; while running a file only grows (the development store: data that outgrows it
 * belongs in MongoDB). The files are single-process: a lock file stops a second process (a CLI while
 * the server runs) from opening the same folder and corrupting it.
 *
 * What a developer relies on (docs/decisions/0014-two-engines.md, 0079-store-write-errors.md):
 * - An operation answers once NeDB has appended its lines to the file, so a killed process (-9) has
 *   lost no write it answered. With `fsync` the file is also synced before a write answers.
 * - A write the file system refuses (a full disk) answers StoreWriteError (507), and the collection's
 *   memory is made equal to its file again: NeDB applies a write to memory before it appends, so the
 *   file is cut back to where it ended before the write (no torn line) and loaded again
 *   (`loadDatabaseAsync`). Until a later load finds the file writable, writes are refused.
 * - One operation of a collection at a time, in the collection's own queue. NeDB serialises a
 *   datastore's operations too (a conditional update is atomic either way), but it would run the
 *   operations queued behind a failed write on memory still holding that write's change.
 */
import fs from "node:fs";
import path from "node:path";
import Datastore from "@seald-io/nedb";
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
import type { StoreWriteError, StoreWriteReason } from "../errors";
import { fsWriteFailure, quietWatch, WriteHealth, type StoreWatch } from "./write-failures";

type Doc = { _id: string | number };

const isUniqueViolation = (err: unknown): boolean =>
  !!err && typeof err === "object" && (err as { errorType?: string }).errorType === "uniqueViolated";

/**
 * The file system's error behind one of NeDB's: when a load's rewrite of the file cannot sync it, NeDB
 * throws "Failed to flush to storage" carrying the failed sync's or close's error.
 */
function causeOf(err: unknown): unknown {
  const e = err as { errorOnFsync?: unknown; errorOnClose?: unknown } | null;
  return (e && typeof e === "object" && (e.errorOnFsync ?? e.errorOnClose)) || err;
}

/**
 * After a failed write, how long the collection refuses writes before the next one first loads the
 * file again (a load rewrites the file, so it is also the check that the disk takes writes): a full
 * disk costs a refusal per request, not a rewrite, and service is back at most this long after space
 * is freed.
 */
const PROBE_INTERVAL_MS = 1000;

export interface NedbCollectionOptions {
  /** Sync a collection's file before a write answers (SYNC_EACH_WRITE by default). */
  fsync: boolean;
  watch: StoreWatch;
}

/** The size of `file`, or null when it cannot be read. */
function fileSize(file: string): number | null {
  try {
    return fs.statSync(file).size;
  } catch {
    return null;
  }
}

/** `fdatasync` of `file`, in the thread pool. */
async function syncFile(file: string): Promise<void> {
  const handle = await fs.promises.open(file, "r");
  try {
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

class NedbCollection<T extends Doc> implements Collection<T> {
  private readonly health: WriteHealth;
  /** The end of the collection's queue: the last operation asked for, settled either way. */
  private tail: Promise<unknown> = Promise.resolve();
  /** A write failed and no load since found the file writable: writes are refused. */
  private blocked = false;
  /** A load failed before it filled memory: memory may not be what the file holds, reads are refused. */
  private stale = false;
  private lastProbe = 0;
  private lastFailure: { code: string; reason: StoreWriteReason; cause: unknown } | null = null;

  constructor(
    private readonly ds: Datastore<T>,
    name: string,
    /** The collection's file; null in memory. */
    private readonly filename: string | null,
    private readonly options: NedbCollectionOptions,
  ) {
    this.health = new WriteHealth(name, filename ?? "(memory)", options.watch);
    // Operations start once NeDB has loaded the file (which rewrites it): a write's `end` is taken after.
    // Should the load fail, NeDB throws it (unhandled, so the process ends) and nothing is answered here.
    this.tail = (ds.autoloadPromise ?? Promise.resolve()).catch(() => void (this.stale = true));
  }

  /** Runs `op` once every operation asked for before it has settled. */
  private queued<R>(op: () => Promise<R>): Promise<R> {
    const run = this.tail.then(op);
    this.tail = run.catch(() => undefined);
    return run;
  }

  private read<R>(op: () => Promise<R>): Promise<R> {
    return this.queued(async () => {
      if (this.stale) await this.admit();
      return op();
    });
  }

  /**
   * A write: refused while the file cannot take writes (see `admit`); answered once NeDB has appended
   * its lines (and, with `fsync`, synced them); on a file system's error, undone (`restore`).
   */
  private write<R>(op: () => Promise<R>): Promise<R> {
    return this.queued(async () => {
      if (this.blocked || this.stale) await this.admit();
      const end = this.filename === null ? null : fileSize(this.filename);
      let result: R;
      try {
        result = await op();
        if (this.options.fsync && this.filename !== null) await syncFile(this.filename);
      } catch (err) {
        throw await this.failed(err, end);
      }
      this.health.succeeded();
      return result;
    });
  }

  /** What the caller of a failed write gets, memory and file first put back in step. */
  private async failed(err: unknown, end: number | null): Promise<unknown> {
    // NeDB checks a unique index before it changes memory, and leaves memory as it was.
    if (isUniqueViolation(err)) return new DuplicateKeyError((err as Error).message);
    const failure = fsWriteFailure(err);
    if (!failure) return err;
    this.block(err);
    await this.restore(end);
    return this.health.failed(failure.code, failure.reason, err);
  }

  /**
   * After a write the file system refused: the file cut back to `end`, its size before the write (a
   * write cut short by a full disk leaves a torn line, which would hide the next write's line and,
   * in a small file, make NeDB refuse to load it), then memory loaded again from the file.
   */
  private async restore(end: number | null): Promise<void> {
    if (this.filename === null) return;
    if (end !== null) {
      try {
        fs.truncateSync(this.filename, end);
      } catch {
        // The load below rewrites the file from what it could read of it, which drops a torn line.
      }
    }
    await this.load();
  }

  /**
   * NeDB's load: memory as the file holds it, then the file rewritten from memory (a new file, synced,
   * renamed over the old one). Resolves to whether all of it went through. When only the rewrite
   * failed, memory still holds what the file does; when the reading failed, memory is empty and the
   * collection answers nothing until a load succeeds.
   */
  private async load(): Promise<boolean> {
    try {
      await this.ds.loadDatabaseAsync();
      this.stale = false;
      return true;
    } catch (err) {
      const cause = causeOf(err);
      if (fsWriteFailure(cause)) this.block(cause);
      const read = this.ds.getAllData().length > 0 || fileSize(this.filename as string) === 0;
      this.stale = !read;
      return false;
    }
  }

  /**
   * While writes fail, an operation is refused at once, except that at most once per
   * PROBE_INTERVAL_MS one first loads the file again, and goes ahead if that goes through.
   */
  private async admit(): Promise<void> {
    if (Date.now() - this.lastProbe < PROBE_INTERVAL_MS) throw this.refused();
    this.lastProbe = Date.now();
    if (!(await this.load())) throw this.refused();
    this.blocked = false;
  }

  /** Writes are refused from now on; the first probe comes PROBE_INTERVAL_MS after the failure. */
  private block(err: unknown): void {
    if (!this.blocked) this.lastProbe = Date.now();
    this.blocked = true;
    const failure = fsWriteFailure(err) ?? { code: "UNKNOWN", reason: "unwritable" as const };
    this.lastFailure = { ...failure, cause: err };
  }

  private refused(): StoreWriteError {
    const last = this.lastFailure ?? { code: "UNKNOWN", reason: "unwritable" as const, cause: "" };
    return this.health.failed(last.code, last.reason, last.cause);
  }

  insertOne(doc: T): Promise<T> {
    return this.write(() => this.ds.insertAsync(doc) as Promise<T>);
  }

  async insertMany(docs: T[]): Promise<void> {
    if (docs.length === 0) return;
    await this.write(() => this.ds.insertAsync(docs));
  }

  findOne(filter: Filter): Promise<T | null> {
    return this.read(() => this.ds.findOneAsync(filter as never) as Promise<T | null>);
  }

  /** NeDB's `findOne` by `_id`: a copy, which the caller may not change all the same (port.ts). */
  readById(id: T["_id"]): Promise<DeepReadonly<T> | null> {
    return this.findOne({ _id: id }) as Promise<DeepReadonly<T> | null>;
  }

  find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    return this.read(() => {
      let cursor = this.ds.findAsync(filter as never);
      if (options.sort) cursor = cursor.sort(options.sort);
      if (options.skip) cursor = cursor.skip(options.skip);
      if (options.limit) cursor = cursor.limit(options.limit);
      return cursor as unknown as Promise<T[]>;
    });
  }

  count(filter: Filter): Promise<number> {
    // countAsync returns a lazy cursor; awaiting it here runs the query exactly once.
    return this.read(() => this.ds.countAsync(filter as never) as unknown as Promise<number>);
  }

  async updateOne(filter: Filter, update: Update, options: { upsert?: boolean } = {}): Promise<number> {
    const res = await this.write(() =>
      this.ds.updateAsync(filter as never, update as never, { upsert: options.upsert ?? false }),
    );
    return res.numAffected;
  }

  async updateMany(filter: Filter, update: Update): Promise<number> {
    const res = await this.write(() =>
      this.ds.updateAsync(filter as never, update as never, { multi: true }),
    );
    return res.numAffected;
  }

  async findOneAndUpdate(
    filter: Filter,
    update: Update,
    options: { upsert?: boolean } = {},
  ): Promise<T | null> {
    const res = await this.write(() =>
      this.ds.updateAsync(filter as never, update as never, {
        upsert: options.upsert ?? false,
        returnUpdatedDocs: true,
      }),
    );
    return res.numAffected === 0 ? null : ((res.affectedDocuments as unknown as T) ?? null);
  }

  deleteOne(filter: Filter): Promise<number> {
    return this.write(() => this.ds.removeAsync(filter as never, { multi: false }));
  }

  deleteMany(filter: Filter): Promise<number> {
    return this.write(() => this.ds.removeAsync(filter as never, { multi: true }));
  }

  async createIndex(spec: IndexSpec): Promise<void> {
    const fieldName = spec.fields.length === 1 ? spec.fields[0] : spec.fields;
    const unique = spec.unique ?? false;
    const sparse = spec.sparse ?? false;
    // `expireAfterSeconds` is left out: NeDB would drop expired documents only as queries meet them, and
    // whoever asks for a TTL index sweeps the same documents itself (port.ts).
    // NeDB keeps index definitions in its file and ignores a second ensureIndex for the same field, and
    // it has no API that tells an index's options: so the index is made again at every start, or one
    // made with other options (an older release) would stay (docs/decisions/0014-two-engines.md).
    await this.write(() => this.ds.removeIndexAsync(fieldName as string));
    await this.write(() => this.ds.ensureIndexAsync({ fieldName, unique, sparse }));
  }

  /** Resolves once every operation asked for before it has settled. */
  async close(): Promise<void> {
    await this.queued(() => Promise.resolve());
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

/** The process a lock file's content names, if it is alive and not this one; else null (a stale lock). */
function liveOtherOwner(content: string): number | null {
  const owner = Number(content);
  return Number.isInteger(owner) && owner > 0 && owner !== process.pid && pidAlive(owner) ? owner : null;
}

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
    const owner = liveOtherOwner(content);
    if (owner !== null) {
      throw new Error(
        `The embedded store in ${dir} is in use by process ${owner}; stop it first (the embedded store is single-process).`,
      );
    }
    if (fs.existsSync(file) && fs.readFileSync(file, "utf8") === content) fs.rmSync(file, { force: true });
  }
  throw new Error(`Could not lock ${dir}`);
}

/** The live process, other than this one, that holds `dir` (its id), or null: nobody, or a stale lock. */
export function lockHolder(dir: string): number | null {
  let content: string;
  try {
    content = fs.readFileSync(lockFile(dir), "utf8");
  } catch {
    return null;
  }
  return liveOtherOwner(content);
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

/**
 * The development store answers a write once its lines are appended, without syncing the file: an
 * answered write already survives kill -9 (it is in the kernel's page cache), and only a power loss,
 * which a developer's machine can take, loses the last seconds. Production keeps documents in MongoDB,
 * whose durability MONGO_URI's write concern decides. A test of the sync passes `fsync: true`.
 */
export const SYNC_EACH_WRITE = false;

export class NedbStore implements Store {
  readonly engine = "nedb" as const;
  private readonly collections = new Map<string, NedbCollection<Doc>>();
  private readonly options: NedbCollectionOptions;

  /**
   * `dir` null keeps every collection in memory. `options.fsync` (default `SYNC_EACH_WRITE`) syncs
   * each write's file before it answers; `options.watch` hears of failed writes
   * (shared/runtime/store-watch).
   */
  constructor(
    private readonly dir: string | null,
    options: Partial<NedbCollectionOptions> = {},
  ) {
    this.options = {
      fsync: options.fsync ?? SYNC_EACH_WRITE,
      watch: options.watch ?? quietWatch,
    };
    if (dir) acquireLock(dir);
  }

  collection<T extends Doc>(name: string): Collection<T> {
    let coll = this.collections.get(name);
    if (!coll) {
      const filename = this.dir ? path.join(this.dir, `${name}.db`) : null;
      const ds = filename
        ? new Datastore<Doc>({ filename, autoload: true })
        : new Datastore<Doc>({ inMemoryOnly: true });
      coll = new NedbCollection<Doc>(ds, name, filename, this.options);
      this.collections.set(name, coll);
    }
    return coll as unknown as Collection<T>;
  }

  async ping(): Promise<void> {}

  /** Lets go of the folder once every operation asked for has settled (each answered once in the file). */
  async close(): Promise<void> {
    await Promise.all([...this.collections.values()].map((c) => c.close()));
    this.collections.clear();
    if (this.dir) releaseLock(this.dir);
  }
}
