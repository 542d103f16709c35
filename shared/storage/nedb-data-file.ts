/**
 * How the embedded engine appends to a collection's file: NeDB's own way is `fs.appendFile` per write
 * (open, write, close: three trips to the thread pool). Here the file stays open and the lines of every
 * operation finished in one turn of the event loop go out in one synchronous write (a group commit):
 * under load a write call costs several times what it costs alone, and a token refresh makes two of them
 * (figures: docs/decisions/0052-nedb-write-path.md).
 *
 * What a caller is told must be on disk, so an operation resolves only once `settled()` says every line
 * appended so far is written, its own and any it may have read: a killed process loses nothing it
 * answered, and nobody is answered from a change a crash could still lose. Lines go out in order, so the
 * last line of each document in the file is always its latest state, as NeDB's loader expects.
 *
 * Compaction replaces the file (write elsewhere, rename). It runs in NeDB's queue after every operation
 * before it, whose lines it includes, so lines still waiting then may go to the old file harmlessly; the
 * descriptor is dropped when compaction is done and the next write opens the new file.
 */
import fs from "node:fs";
import type Datastore from "@seald-io/nedb";
import { serializeLine } from "./nedb-fast-paths";
import type { Appender, NedbPersistence } from "./nedb-internals";

type Waiter = { resolve: () => void; reject: (err: unknown) => void };

/** Receives a datastore's appends once the nedb-group-commit hook is applied (nedb-internals). */
export class NedbDataFile implements Appender {
  private readonly persistence: NedbPersistence;
  private fd: number | null = null;
  private lines: string[] = [];
  private waiters: Waiter[] = [];
  private scheduled = false;

  constructor(ds: Datastore<never>) {
    this.persistence = (ds as unknown as { persistence: NedbPersistence }).persistence;
    // (A documented event.) Without the hook nothing is ever opened here, and releasing does nothing.
    ds.on("compaction.done", () => this.release());
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
    try {
      if (lines.length > 0) this.write(Buffer.from(`${lines.join("\n")}\n`, "utf8"));
    } catch (err) {
      for (const w of waiters) w.reject(err);
      return;
    }
    for (const w of waiters) w.resolve();
  }

  release(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private write(bytes: Buffer): void {
    this.fd ??= fs.openSync(this.persistence.filename, "a", this.persistence.modes.fileMode);
    for (let written = 0; written < bytes.length;) {
      written += fs.writeSync(this.fd, bytes, written, bytes.length - written);
    }
  }
}
