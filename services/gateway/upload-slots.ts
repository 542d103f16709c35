/**
 * Bounded concurrency for uploads, per caller and in total, in one gateway process. An upload holds its
 * slot while its body arrives, which a slow network (or a client on purpose) can make long; the slots
 * keep such requests from taking what every other request needs. An upload beyond them waits for a slot
 * (UPLOAD_SLOT_WAIT_MS, first come first served), so that an honest burst (a manager sending ten
 * pictures at once) is served rather than refused; past the wait, or with as many uploads already
 * waiting as there are slots, it is answered 503 with Retry-After. Its body is not read while it waits.
 */
import { UploadsBusyError } from "../../shared/errors";

/**
 * Uploads one gateway process takes at once: each holds a socket, a parser and up to a chunk of its
 * picture in memory (a few hundred KB), so 32 stay within a few MB while outnumbering the stores
 * processes' writes many times over; more would only queue at the stores.
 */
export const UPLOADS_MAX = 32;

/**
 * Uploads one caller sends at once to one gateway: a manager's burst (a few pictures at once) is served
 * four at a time, the rest waiting below, while one caller can never take all of UPLOADS_MAX.
 */
export const UPLOADS_MAX_PER_CALLER = 4;

/**
 * How long an upload beyond its slots waits for one before 503: two seconds, about what a small picture
 * ahead of it takes on a mobile uplink, so an honest burst is served rather than refused, while a
 * stalled one makes the next wait no longer than a user would before tapping again.
 */
export const UPLOAD_SLOT_WAIT_MS = 2000;

/** What a refused upload is told to wait before trying again, in seconds. */
export const UPLOAD_RETRY_AFTER_SECONDS = 5;

interface Waiter {
  caller: string;
  grant(release: () => void): void;
  timer: NodeJS.Timeout;
}

export class UploadSlots {
  private inFlight = 0;
  private readonly byCaller = new Map<string, number>();
  private readonly waiting: Waiter[] = [];

  constructor(
    private readonly maxTotal: number,
    private readonly maxPerCaller: number,
    /** How long an upload beyond the slots waits for one (0: refused at once). */
    private readonly waitMs = 0,
  ) {}

  /**
   * A slot for `caller`, at once or within the wait (never past `deadline`, epoch ms), or throws
   * UploadsBusyError; the returned function gives it back (once). `signal` ends a wait early (the client
   * went away).
   */
  async take(caller: string, deadline = Infinity, signal?: AbortSignal): Promise<() => void> {
    // A waiter only waits while it has no room (a freed slot goes to the first that fits at once), so
    // one that has room now takes it without overtaking anyone who could.
    if (this.hasRoom(caller)) return this.grantTo(caller);
    const waitMs = Math.min(this.waitMs, deadline - Date.now());
    if (waitMs <= 0 || this.waiting.length >= this.maxTotal || signal?.aborted) throw this.busy(caller);
    return new Promise<() => void>((resolve, reject) => {
      const leave = (err: Error) => {
        const at = this.waiting.indexOf(waiter);
        if (at >= 0) this.waiting.splice(at, 1);
        signal?.removeEventListener("abort", aborted);
        reject(err);
        // Whoever waited behind this one may fit now (another caller, when this one's were taken).
        this.serveWaiting();
      };
      const aborted = () => {
        clearTimeout(waiter.timer);
        leave(this.busy(caller));
      };
      const waiter: Waiter = {
        caller,
        grant: (release) => {
          clearTimeout(waiter.timer);
          signal?.removeEventListener("abort", aborted);
          resolve(release);
        },
        timer: setTimeout(() => leave(this.busy(caller)), waitMs),
      };
      signal?.addEventListener("abort", aborted, { once: true });
      this.waiting.push(waiter);
    });
  }

  /** Uploads in progress (for tests and metrics). */
  get size(): number {
    return this.inFlight;
  }

  /** Uploads waiting for a slot. */
  get queued(): number {
    return this.waiting.length;
  }

  private hasRoom(caller: string): boolean {
    return this.inFlight < this.maxTotal && (this.byCaller.get(caller) ?? 0) < this.maxPerCaller;
  }

  private busy(caller: string): UploadsBusyError {
    return (this.byCaller.get(caller) ?? 0) >= this.maxPerCaller
      ? new UploadsBusyError(
          `Too many uploads in progress for this user (at most ${this.maxPerCaller}); retry later`,
          UPLOAD_RETRY_AFTER_SECONDS,
        )
      : new UploadsBusyError("Too many uploads in progress; retry later", UPLOAD_RETRY_AFTER_SECONDS);
  }

  private grantTo(caller: string): () => void {
    this.inFlight++;
    this.byCaller.set(caller, (this.byCaller.get(caller) ?? 0) + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.inFlight--;
      const left = (this.byCaller.get(caller) ?? 1) - 1;
      if (left > 0) this.byCaller.set(caller, left);
      else this.byCaller.delete(caller);
      this.serveWaiting();
    };
  }

  /** Grants freed slots to the waiters that fit, oldest first. */
  private serveWaiting(): void {
    for (let i = 0; i < this.waiting.length && this.inFlight < this.maxTotal;) {
      const waiter = this.waiting[i];
      if (!this.hasRoom(waiter.caller)) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      waiter.grant(this.grantTo(waiter.caller));
    }
  }
}
