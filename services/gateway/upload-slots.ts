/**
 * Bounded concurrency for uploads, per caller and in total, in one gateway process. An upload holds its
 * slot while its body arrives, which a slow network (or a client on purpose) can make long; the slots
 * keep such requests from taking what every other request needs. Beyond them: 503 with Retry-After.
 */
import { UploadsBusyError } from "../../shared/errors";

/** What a refused upload is told to wait before trying again, in seconds. */
export const UPLOAD_RETRY_AFTER_SECONDS = 5;

export class UploadSlots {
  private inFlight = 0;
  private readonly byCaller = new Map<string, number>();

  constructor(
    private readonly maxTotal: number,
    private readonly maxPerCaller: number,
  ) {}

  /** Takes a slot for `caller`, or throws UploadsBusyError; the returned function gives it back (once). */
  take(caller: string): () => void {
    const own = this.byCaller.get(caller) ?? 0;
    if (own >= this.maxPerCaller) {
      throw new UploadsBusyError(
        `Too many uploads in progress for this user (at most ${this.maxPerCaller}); retry later`,
        UPLOAD_RETRY_AFTER_SECONDS,
      );
    }
    if (this.inFlight >= this.maxTotal) {
      throw new UploadsBusyError("Too many uploads in progress; retry later", UPLOAD_RETRY_AFTER_SECONDS);
    }
    this.inFlight++;
    this.byCaller.set(caller, own + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.inFlight--;
      const left = (this.byCaller.get(caller) ?? 1) - 1;
      if (left > 0) this.byCaller.set(caller, left);
      else this.byCaller.delete(caller);
    };
  }

  /** Uploads in progress (for tests and metrics). */
  get size(): number {
    return this.inFlight;
  }
}
