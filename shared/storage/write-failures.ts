/**
 * Failed store writes, the same way on both engines: the file system's or MongoDB's error becomes a
 * StoreWriteError (507, shared/errors), and what a process must know about it goes to a StoreWatch:
 * every failed operation (to count it), and every change of a collection's state (its writes start
 * failing, fail with another code, succeed again), so that an outage is one log line, not one per
 * request (shared/runtime/store-watch.ts; docs/decisions/0079-store-write-errors.md).
 */
import { StoreWriteError, type StoreWriteReason } from "../errors";

export interface WriteFailure {
  /** The collection. */
  store: string;
  /** Where it is kept: the NeDB file, or MongoDB's `database.collection`. */
  path: string;
  /** The file system's errno code (ENOSPC, EIO…) or MongoDB's error code. */
  code: string;
  reason: StoreWriteReason;
  /** The underlying error's own words, for the log (never sent to a client). */
  message: string;
}

export interface StoreWatch {
  /** One operation failed for want of a writable store (counted). */
  failed(f: WriteFailure): void;
  /** A collection's writes started failing, or now fail with another code (logged once). */
  failing(f: WriteFailure): void;
  /** A collection's writes succeed again, after `failures` failed operations since `since`. */
  recovered(r: { store: string; path: string; failures: number; since: Date }): void;
}

/** For stores opened outside a broker (CLI, tests): failures are still thrown, just not reported. */
export const quietWatch: StoreWatch = { failed() {}, failing() {}, recovered() {} };

/**
 * File system errors that mean "this storage cannot take the write". A full disk and an exceeded quota
 * (or the file size limit) are "full"; the rest, "unwritable". Errors without a system call behind
 * them are not storage failures (a unique index, a programming error) and stay what they are.
 */
const FS_CODES: Record<string, StoreWriteReason> = {
  ENOSPC: "full",
  EDQUOT: "full",
  EFBIG: "full",
  EIO: "unwritable",
  EROFS: "unwritable",
  EACCES: "unwritable",
  EPERM: "unwritable",
  ENOENT: "unwritable", // the data folder or file was removed under the process
  ESTALE: "unwritable", // a network file system lost the file
};

/** The errno code and reason when `err` is a file system error of a store write; else null. */
export function fsWriteFailure(err: unknown): { code: string; reason: StoreWriteReason } | null {
  const e = err as { code?: unknown; syscall?: unknown } | null;
  if (!e || typeof e !== "object" || typeof e.code !== "string" || typeof e.syscall !== "string") return null;
  const reason = FS_CODES[e.code];
  return reason ? { code: e.code, reason } : null;
}

/** One collection's write state, reported through a StoreWatch. */
export class WriteHealth {
  private failingCode: string | null = null;
  private failures = 0;
  private since = new Date(0);

  constructor(
    private readonly store: string,
    private readonly path: string,
    private readonly watch: StoreWatch,
  ) {}

  get failing(): boolean {
    return this.failingCode !== null;
  }

  /** Records one failed operation and returns the error its caller gets. */
  failed(code: string, reason: StoreWriteReason, cause: unknown): StoreWriteError {
    const message = cause instanceof Error ? cause.message : String(cause);
    const failure: WriteFailure = { store: this.store, path: this.path, code, reason, message };
    if (this.failingCode === null) {
      this.failures = 0;
      this.since = new Date();
    }
    this.failures++;
    if (this.failingCode !== code) {
      this.failingCode = code;
      this.report(() => this.watch.failing(failure));
    }
    this.report(() => this.watch.failed(failure));
    return new StoreWriteError(reason, { store: this.store, code });
  }

  /** A write went through: if writes were failing, they no longer are. */
  succeeded(): void {
    if (this.failingCode === null) return;
    this.failingCode = null;
    const r = { store: this.store, path: this.path, failures: this.failures, since: this.since };
    this.report(() => this.watch.recovered(r));
  }

  /** A watch that throws (a logger gone) must not turn a clean answer into a fault. */
  private report(tell: () => void): void {
    try {
      tell();
    } catch {
      // Nothing to do: the caller still gets its error or its result.
    }
  }
}
