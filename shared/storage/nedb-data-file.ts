/**
 * How the embedded engine appends to a collection's file: NeDB's own way is `fs.appendFile` per write
 * (open, write, close: three trips to the thread pool). Here the file stays open and the lines of every
 * operation finished in one turn of the event loop go out in one synchronous write (a group commit):
 * under load a write call costs several times what it costs alone, and a token refresh made two of them
 * when this was measured (figures: docs/decisions/0052-nedb-write-path.md). With STORE_FSYNC the write is followed by one
 * `fdatasync` per group, so what was answered also outlives a power loss (what that costs:
 * docs/decisions/0014-two-engines.md).
 *
 * Lines appended by what a group write has just answered go out in the same turn, once those
 * continuations have run, not a turn later (shared/storage/nedb-follow-up).
 *
 * What a caller is told must be on disk, so an operation resolves only once `settled()` says every line
 * appended so far is written, its own and any it may have read: a killed process loses nothing it
 * answered, and nobody is answered from a change a crash could still lose. Lines go out in order, so the
 * last line of each document in the file is always its latest state, as NeDB's loader expects.
 *
 * A group that cannot be written (a full disk, a failing or read-only file system) fails every
 * operation waiting on it, and memory and file are made to agree again before anything else runs:
 * NeDB changed its memory before it handed over the lines, so the file is cut back to where it ended
 * before the group (a partial write must not stay, whole lines of it loaded at the next start, nor
 * glue a torn line to the next group's first), and memory is rebuilt from the file up to there, in
 * the same synchronous step. Until `probe()` finds the file writable again the collection refuses
 * writes (shared/storage/nedb.ts). Why this way: docs/decisions/0079-store-write-errors.md.
 *
 * Compaction replaces the file (write elsewhere, rename). It runs in NeDB's queue after every operation
 * before it, and first writes the lines still waiting here (`beforeCompaction`), so what it writes out
 * is what the file held; the descriptor is dropped when compaction is done and the next write opens the
 * new file.
 */
import fs from "node:fs";
import type Datastore from "@seald-io/nedb";
import { serializeLine } from "./nedb-fast-paths";
import { heldForFollowUp, openFollowUp } from "./nedb-follow-up";
import { nedbLibs, type Appender, type NedbPersistence } from "./nedb-internals";

type Waiter = { resolve: () => void; reject: (err: unknown) => void };

/**
 * What `probe()` writes and cuts off again to learn whether the file takes writes: blank lines, which
 * NeDB's loader skips, so that if cutting them off fails they are harmless. 64 KB: more than a group
 * of a busy turn usually holds, so a disk with a few bytes free in its last block does not pass.
 */
const PROBE = Buffer.alloc(64 * 1024, "\n");

/** Open for appending to a file that exists (NeDB created it when it loaded): a removed file fails. */
const APPEND = fs.constants.O_WRONLY | fs.constants.O_APPEND;

export interface DataFileOptions {
  /** `fdatasync` after each group's write (STORE_FSYNC). */
  fsync: boolean;
  /** Called, synchronously, when a write failed and memory was put back: the collection stops writing. */
  onWriteFailed(err: unknown): void;
}

/** Receives a datastore's appends once the nedb-group-commit hook is applied (nedb-internals). */
export class NedbDataFile implements Appender {
  private readonly persistence: NedbPersistence;
  private fd: number | null = null;
  /**
   * Where the file ends with only lines of operations that succeeded (from fstat at open, then after
   * each group written); null until the file is opened. Beyond it: a failed group, until cut off.
   */
  private end: number | null = null;
  /** A failed group left bytes beyond `end` that could not be cut off yet. */
  private cutPending = false;
  /** Memory could not be rebuilt after a failed group: it may hold changes the file does not. */
  private memoryStale = false;
  private lines: string[] = [];
  private waiters: Waiter[] = [];
  private scheduled = false;

  constructor(
    ds: Datastore<never>,
    private readonly options: DataFileOptions = { fsync: false, onWriteFailed: () => undefined },
  ) {
    this.persistence = (ds as unknown as { persistence: NedbPersistence }).persistence;
    // (A documented event.) Without the hook nothing is ever opened here, and releasing does nothing.
    ds.on("compaction.done", () => this.release());
  }

  /** True while memory may hold changes the file does not: nothing may be read from it. */
  get stale(): boolean {
    return this.memoryStale;
  }

  // NedbStore sets no serialization hooks, so NeDB's afterSerialization (identity) is left out here.
  append(docs: unknown[]): void {
    for (const doc of docs) this.lines.push(serializeLine(doc));
    this.schedule();
  }

  /** Resolves once every line appended so far is in the file; rejects if writing them failed. */
  settled(): Promise<void> | undefined {
    if (this.lines.length === 0) return undefined;
    return new Promise((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      this.schedule();
    });
  }

  /** Writes what waits now (before closing, or before the file is replaced). */
  flush(): void {
    this.scheduled = false;
    const lines = this.lines;
    const waiters = this.waiters;
    this.lines = [];
    this.waiters = [];
    if (lines.length > 0) {
      try {
        this.write(Buffer.from(`${lines.join("\n")}\n`, "utf8"));
      } catch (err) {
        this.undo();
        this.options.onWriteFailed(err);
        for (const w of waiters) w.reject(err);
        return;
      }
    }
    for (const w of waiters) w.resolve();
    // What they write next goes out in this turn too (shared/storage/nedb-follow-up).
    if (waiters.length > 0) openFollowUp();
  }

  /** Compaction is about to write memory out: the lines of operations already run go first. */
  beforeCompaction(): void {
    this.flush();
    // Memory that may hold a failed group's changes must not be written out as the new file.
    if (this.memoryStale) throw new Error(`${this.persistence.filename}: memory not rebuilt, not compacted`);
  }

  /**
   * Whether the file takes writes again, by doing what a write does: memory rebuilt if that failed
   * before, what a failed group left cut off, then blank lines written (and synced, with STORE_FSYNC)
   * and cut off again. Throws the file system's error when it does not.
   */
  probe(): void {
    if (this.memoryStale) this.rebuild();
    this.open();
    if (this.cutPending) this.cut();
    const before = this.end as number;
    try {
      this.write(PROBE);
    } catch (err) {
      this.tryCut();
      throw err;
    }
    // Cut off again; should that fail, blank lines stay, which the loader skips (`end` counts them).
    try {
      fs.ftruncateSync(this.fd as number, before);
      this.end = before;
    } catch {
      // Harmless, as said.
    }
  }

  release(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
    // A new file (compaction wrote memory out, which matched the old file up to `end`).
    this.end = null;
    this.cutPending = false;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    if (heldForFollowUp(this)) return;
    setImmediate(() => this.flush());
  }

  /** Opens the file if it is not (after a start or a compaction), learning where it ends. */
  private open(): void {
    if (this.fd !== null) return;
    const fd = fs.openSync(this.persistence.filename, APPEND);
    try {
      this.end = fs.fstatSync(fd).size;
    } catch (err) {
      fs.closeSync(fd);
      throw err;
    }
    this.fd = fd;
  }

  /** Appends `bytes` (and syncs them, with STORE_FSYNC); `end` moves only once all of it is in. */
  private write(bytes: Buffer): void {
    this.open();
    const fd = this.fd as number;
    try {
      for (let written = 0; written < bytes.length;) {
        written += fs.writeSync(fd, bytes, written, bytes.length - written);
      }
      if (this.options.fsync) fs.fdatasyncSync(fd);
    } catch (err) {
      // Some of it may be in the file (a write cut short by a full disk, or written but not synced).
      this.cutPending = true;
      throw err;
    }
    this.end = (this.end as number) + bytes.length;
  }

  /** After a failed group: the file cut back to its last good end, and memory rebuilt from it. */
  private undo(): void {
    this.tryCut();
    try {
      this.rebuild();
    } catch {
      // Retried by every probe; until one succeeds the collection answers nothing from memory.
      this.memoryStale = true;
    }
  }

  private cut(): void {
    if (this.fd !== null && this.end !== null) fs.ftruncateSync(this.fd, this.end);
    this.cutPending = false;
  }

  private tryCut(): void {
    try {
      this.cut();
    } catch {
      // Retried before the next write (probe); meanwhile `end` still marks where the good part ends.
    }
  }

  /**
   * Memory as the file holds it up to `end` (all of it if the file was not opened since it was
   * loaded or compacted), read the way NeDB's loader reads it: the last line of each `_id` wins, a
   * `$$deleted` line removes it, a line that does not parse is skipped. Synchronous, so that no
   * operation runs on memory that still holds the failed group. Index definitions stay as they are.
   */
  private rebuild(): void {
    const raw = this.readGoodPart();
    const model = nedbLibs.model;
    const byId = new Map<string, Record<string, unknown>>();
    for (const line of raw.split("\n")) {
      if (line === "") continue;
      let doc: Record<string, unknown>;
      try {
        doc = model.deserialize(line) as Record<string, unknown>;
      } catch {
        continue;
      }
      if (!doc?._id) continue; // an index definition
      const key = String(doc._id as string | number);
      if (doc.$$deleted === true) byId.delete(key);
      else byId.set(key, doc);
    }
    this.persistence.db._resetIndexes([...byId.values()]);
    this.memoryStale = false;
  }

  private readGoodPart(): string {
    const fd = fs.openSync(this.persistence.filename, "r");
    try {
      const size = this.end ?? fs.fstatSync(fd).size;
      const bytes = Buffer.allocUnsafe(size);
      for (let read = 0; read < size;) {
        const n = fs.readSync(fd, bytes, read, size - read, read);
        if (n === 0) throw new Error(`${this.persistence.filename} is shorter than ${size} bytes`);
        read += n;
      }
      return bytes.toString("utf8");
    } finally {
      fs.closeSync(fd);
    }
  }
}
