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
  type DeepReadonly,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type Store,
  type Update,
} from "./port";
import { loadSetting } from "../config";
import type { HookSettings } from "../runtime/internals";
import type { StoreWriteError, StoreWriteReason } from "../errors";
import {
  compactionDue,
  compactionPhase,
  fileSize,
  liveBytes,
  mostlyDead,
  roomToCompact,
  syncToDisk,
} from "./nedb-compaction";
import { NedbDataFile } from "./nedb-data-file";
import { compactDatafile, hookDatastore } from "./nedb-internals";
import { fsWriteFailure, quietWatch, WriteHealth, type StoreWatch } from "./write-failures";

type Doc = { _id: string | number };

/** The parts of a NeDB datastore the nedb-read-by-id hook reads. */
interface NedbInternals<T> {
  executor: { pushAsync<R>(task: () => Promise<R>): Promise<R> };
  indexes: { _id: { getMatching(value: unknown): T[] } };
}

const isUniqueViolation = (err: unknown): boolean =>
  !!err && typeof err === "object" && (err as { errorType?: string }).errorType === "uniqueViolated";

/**
 * After a failed write, how long the collection refuses writes before the next one first checks the
 * file (NedbDataFile.probe): a full disk costs a refusal, not a write and a rebuild of memory, per
 * request, and service is back at most this long after space is freed.
 */
const PROBE_INTERVAL_MS = 1000;

export interface NedbCollectionOptions {
  /** `fdatasync` after each group commit (STORE_FSYNC). */
  fsync: boolean;
  watch: StoreWatch;
  /**
   * How often each file is looked at and compacted if it grew enough (STORE_COMPACTION_INTERVAL_SECONDS,
   * shared/storage/nedb-compaction.ts); 0: only when loaded, and at close if mostly dead lines.
   */
  compactionIntervalMs: number;
  /**
   * The largest file compacted while running (STORE_COMPACTION_MAX_MB); 0: no limit. A larger one is
   * compacted only when loaded (docs/decisions/0078-nedb-compaction-while-running.md).
   */
  compactionMaxBytes: number;
}

class NedbCollection<T extends Doc> implements Collection<T> {
  private readonly file: NedbDataFile;
  /** Which of NeDB's internals this datastore's operations may use (shared/storage/nedb-internals). */
  private readonly hooks: ReturnType<typeof hookDatastore>;
  private readonly health: WriteHealth;
  /** A write failed and no probe since found the file writable: writes are refused. */
  private blocked = false;
  private lastProbe = 0;
  private lastFailure: { code: string; reason: StoreWriteReason; cause: unknown } | null = null;
  /** NeDB's own appends (group commit off): memory being loaded again from the file. */
  private reloading: Promise<void> | null = null;
  /**
   * What the file must double from before a look may compact it: its size after its last compaction
   * (NeDB compacts at every load too), or its live bytes when a look last found it mostly live; null:
   * not yet known.
   */
  private compactionBase: number | null = null;
  /** The file has been reported too large to compact while running (said once, not at every look). */
  private deferralTold = false;

  constructor(
    private readonly ds: Datastore<T>,
    private readonly name: string,
    private readonly filename: string,
    settings: HookSettings,
    private readonly options: NedbCollectionOptions,
  ) {
    // (A documented event: after a load, a `compactDatafileAsync`, or a compaction of ours.)
    ds.on("compaction.done", () => void (this.compactionBase = fileSize(filename)));
    this.health = new WriteHealth(name, filename, options.watch);
    this.file = new NedbDataFile(ds as unknown as Datastore<never>, {
      fsync: options.fsync,
      // Synchronous, in the turn of the failed write: no write slips through before the refusals start.
      onWriteFailed: (err) => this.block(err),
    });
    this.hooks = hookDatastore(ds as unknown as Datastore<never>, this.file, settings);
  }

  /**
   * Every operation, reads too, answers only once what it changed or saw is on disk (see NedbDataFile),
   * and a refused write's error stays the engine-neutral one of the port (a duplicate key, or a
   * StoreWriteError when the file system refused).
   */
  private async durably<R>(op: Promise<R>, writes = false): Promise<R> {
    let result: R;
    try {
      try {
        result = await op;
      } finally {
        await this.file.settled();
      }
    } catch (err) {
      throw this.translate(err);
    }
    if (writes) this.health.succeeded();
    return result;
  }

  /** A write: refused while the file cannot take writes (see `admit`). */
  private write<R>(op: () => Promise<R>): Promise<R> {
    if (this.blocked || this.file.stale) return this.admit().then(() => this.durably(op(), true));
    return this.durably(op(), true);
  }

  /** A read: refused only while memory may hold changes the file does not (NedbDataFile.stale). */
  private read<R>(op: () => Promise<R>): Promise<R> {
    if (this.file.stale) return this.admit().then(() => this.durably(op()));
    return this.durably(op());
  }

  /**
   * While writes fail, an operation is refused at once, except that at most once per
   * PROBE_INTERVAL_MS one first checks whether the file takes writes again, and goes ahead if it does.
   */
  private async admit(): Promise<void> {
    if (Date.now() - this.lastProbe < PROBE_INTERVAL_MS) throw this.refused();
    this.lastProbe = Date.now();
    try {
      if (this.hooks.groupCommit) this.file.probe();
      // NeDB's own way: loading the file again puts memory back as the file holds it, and compacts it,
      // a write of every document; done, the file is writable and both agree.
      else await this.ds.loadDatabaseAsync();
    } catch (err) {
      this.block(err);
      throw this.refused();
    }
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

  /** What the caller of a failed operation gets. */
  private translate(err: unknown): unknown {
    if (isUniqueViolation(err)) return new DuplicateKeyError((err as Error).message);
    const failure = fsWriteFailure(err);
    if (!failure) return err;
    this.block(err);
    // NeDB's own appends change memory first, then write: load it again from the file (the group
    // commit has already done so, in the turn of the failed write).
    if (!this.hooks.groupCommit) {
      this.reloading ??= this.ds
        .loadDatabaseAsync()
        .catch(() => undefined)
        .finally(() => void (this.reloading = null));
    }
    return this.health.failed(failure.code, failure.reason, err);
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

  /**
   * The kept document itself, from the `_id` index: no query, no cursor, no copy. It runs in NeDB's
   * queue like every operation, so it sees every write asked for before it. Without the hook, findOne.
   * It answers with the turn's group write, as every operation does, though only its own document's
   * lines matter to it: answered apart, reads made the embedded server serve fewer requests a second
   * (docs/decisions/0052-nedb-write-path.md).
   */
  readById(id: T["_id"]): Promise<DeepReadonly<T> | null> {
    if (!this.hooks.readById) return this.findOne({ _id: id }) as Promise<DeepReadonly<T> | null>;
    const ds = this.ds as unknown as NedbInternals<T>;
    return this.read(() =>
      ds.executor.pushAsync(
        async () => (ds.indexes._id.getMatching(id)[0] ?? null) as DeepReadonly<T> | null,
      ),
    );
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
    // made with other options (an older release) would stay (docs/decisions/0052-nedb-write-path.md).
    await this.write(() => this.ds.removeIndexAsync(fieldName as string));
    await this.write(() => this.ds.ensureIndexAsync({ fieldName, unique, sparse }));
  }

  async compact(): Promise<void> {
    await this.durably(this.compactNow(this.ds.getAllData()));
  }

  /** NeDB's compaction of `docs`, the collection's documents just taken, its file synced ahead. */
  private compactNow(docs: readonly object[]): Promise<number> {
    return compactDatafile(this.ds, docs, () => syncToDisk(this.filename));
  }

  /**
   * Compacts the file if it has grown enough since its last compaction and at least half of it is dead
   * lines (nedb-compaction.ts); resolves to whether it did. Its lines are made first (compactDatafile);
   * then NeDB runs the compaction in the datastore's queue: operations asked for meanwhile wait for it
   * and then run on the new file (with the group commit, the lines still waiting are written to the old
   * file first, NedbDataFile.beforeCompaction). A failure leaves the old file as it was and is reported,
   * never thrown: the collection goes on, and the next look tries again.
   */
  async compactIfGrown(): Promise<boolean> {
    if (this.blocked || this.file.stale) return false;
    const size = fileSize(this.filename);
    if (size === null) return false;
    const base = (this.compactionBase ??= size);
    if (!compactionDue(size, base)) return false;
    const watch = this.options.watch;
    const report = { store: this.name, path: this.filename };
    if (this.tooLargeToCompact(size)) {
      const maxBytes = this.options.compactionMaxBytes;
      if (!this.deferralTold) watch.compactionDeferred?.({ ...report, bytes: size, maxBytes });
      this.deferralTold = true;
      return false;
    }
    const docs = this.ds.getAllData();
    const live = liveBytes(docs);
    if (!mostlyDead(size, live)) {
      this.compactionBase = live; // grown by inserts more than by dead lines: look again once it has doubled
      return false;
    }
    if (!roomToCompact(this.filename, size)) {
      watch.compactionFailed?.({ ...report, message: `not compacted: less than ${2 * size} bytes free` });
      return false;
    }
    let held: number;
    try {
      held = await this.compactNow(docs); // the documents just estimated, in the same turn
    } catch (err) {
      watch.compactionFailed?.({ ...report, message: (err as Error).message ?? String(err) });
      return false;
    }
    const ms = Math.round(held);
    watch.compacted?.({ ...report, bytesBefore: size, bytesAfter: this.compactionBase ?? 0, ms });
    return true;
  }

  /** Whether a file of `size` bytes is above STORE_COMPACTION_MAX_MB (0: no limit). */
  private tooLargeToCompact(size: number): boolean {
    const maxBytes = this.options.compactionMaxBytes;
    return maxBytes > 0 && size > maxBytes;
  }

  /**
   * Lets go of the file once every operation asked before it has run, its lines written and synced to
   * disk. The file is compacted first only if at least half of it is dead lines and it is within
   * STORE_COMPACTION_MAX_MB: rewriting a file that is mostly live (one grown by inserts) would only make
   * the stop longer, since NeDB rewrites every file it loads anyway
   * (docs/decisions/0078-nedb-compaction-while-running.md, which also says why a large file is not).
   */
  async close(): Promise<void> {
    const size = fileSize(this.filename);
    const docs = size === null || !this.tooLargeToCompact(size) ? this.ds.getAllData() : null;
    if (docs && (size === null || mostlyDead(size, liveBytes(docs)))) {
      await this.durably(this.compactNow(docs)).catch(() => undefined);
    } else {
      // An operation through NeDB's queue all the same: whatever was asked before it has run.
      await this.durably(this.ds.countAsync({ _id: "" })).catch(() => undefined);
    }
    this.file.flush();
    // Synced either way: appends are synced only with STORE_FSYNC, and the flush may follow a compaction.
    await syncToDisk(this.filename);
    this.file.release();
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

export class NedbStore implements Store {
  readonly engine = "nedb" as const;
  private readonly collections = new Map<string, NedbCollection<Doc>>();
  private readonly options: NedbCollectionOptions;
  private compactionTimer: NodeJS.Timeout | null = null;
  /** The pass of `compactGrown` under way, if any: never two at once, and `close` waits for it. */
  private compacting: Promise<string[]> | null = null;
  private closed = false;

  /**
   * `dir` null keeps every collection in memory. `hooks`: which of NeDB's internals may be used
   * (INTERNALS_HOOKS_OFF), and `options.fsync` (STORE_FSYNC), each read alone when a store is opened
   * without a loaded configuration. `options.watch` hears of failed writes (shared/runtime/store-watch).
   */
  constructor(
    private readonly dir: string | null,
    private readonly hooks: HookSettings = { off: loadSetting("internalsHooksOff") },
    options: Partial<NedbCollectionOptions> = {},
  ) {
    this.options = {
      fsync: options.fsync ?? loadSetting("storeFsync"),
      watch: options.watch ?? quietWatch,
      compactionIntervalMs:
        options.compactionIntervalMs ?? loadSetting("storeCompactionIntervalSeconds") * 1000,
      compactionMaxBytes: options.compactionMaxBytes ?? loadSetting("storeCompactionMaxMb") * 2 ** 20,
    };
    if (dir) acquireLock(dir);
    if (dir && this.options.compactionIntervalMs > 0) {
      // The first check after a random part of the interval: processes started together would otherwise
      // compact at the same instants (docs/decisions/0052-nedb-write-path.md).
      const interval = this.options.compactionIntervalMs;
      const tick = () => void this.compactGrown();
      this.compactionTimer = setTimeout(() => {
        tick();
        if (!this.closed) this.compactionTimer = setInterval(tick, interval).unref();
      }, compactionPhase(interval)).unref();
    }
  }

  /**
   * Compacts, one after the other, the files that have grown enough since their last compaction
   * (shared/storage/nedb-compaction.ts); resolves to the names of the collections compacted. One pass
   * at a time: a pass asked for while one runs gets that one's answer.
   */
  compactGrown(): Promise<string[]> {
    if (this.closed || !this.dir) return Promise.resolve([]);
    this.compacting ??= (async () => {
      const done: string[] = [];
      for (const [name, coll] of [...this.collections]) {
        if (this.closed) break;
        if (await coll.compactIfGrown()) done.push(name);
      }
      return done;
    })().finally(() => void (this.compacting = null));
    return this.compacting;
  }

  collection<T extends Doc>(name: string): Collection<T> {
    let coll = this.collections.get(name);
    if (!coll) {
      const filename = this.dir ? path.join(this.dir, `${name}.db`) : null;
      const ds = filename
        ? new Datastore<Doc>({ filename, autoload: true })
        : new Datastore<Doc>({ inMemoryOnly: true });
      coll = new NedbCollection<Doc>(ds, name, filename ?? "(memory)", this.hooks, this.options);
      this.collections.set(name, coll);
    }
    return coll as unknown as Collection<T>;
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    this.closed = true;
    if (this.compactionTimer) clearTimeout(this.compactionTimer); // the first check's, or the interval's
    await this.compacting;
    if (this.dir) {
      // Each writes out and syncs its file, compacted first if it is mostly dead lines.
      await Promise.all([...this.collections.values()].map((c) => c.close()));
    }
    this.collections.clear();
    if (this.dir) releaseLock(this.dir);
  }
}
