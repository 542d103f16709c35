/**
 * The limits per client address, counted before authentication (decision 0037): every request a
 * gateway takes (ADDRESS_RATE_LIMIT a minute), and the failed authentications (AUTH_FAILURE_LIMIT a
 * minute), past which a request that would cost a call to auth is refused instead: guessing keys or
 * tokens then costs the guesser a minute per few hundred guesses, and auth nothing.
 *
 * Counted in each gateway's memory, synchronously, never in Redis: a flood guard needs no cluster-wide
 * precision (behind N gateways an address gets up to N times the limit), and a Redis round trip before
 * every request would slow every read and make Redis a dependency of each. Fixed one-minute windows, as
 * RATE_LIMITS counts (gateway/rate-limit), dropped whole when the next one begins; at most
 * `maxAddresses` are counted in a window, past which a new address goes uncounted for the rest of it
 * (refusing the honest ones a full table would hold is worse than letting a few more through).
 */
import { RateLimitedError } from "./rate-limit";

const WINDOW_MS = 60_000;

/**
 * Refused credentials a minute per address before requests that would ask auth are refused: 600, ten a
 * second, which no honest client (nor a NAT of many) reaches with keys and tokens it was given, while a
 * guesser gets a few hundred guesses a minute instead of thousands, and auth is not asked for them.
 */
export const AUTH_FAILURE_LIMIT = 600;

export interface AddressLimitSettings {
  /** Requests a minute per address; 0: not counted. */
  requestsPerMinute: number;
  /** Failed authentications a minute per address; 0: not counted. */
  failuresPerMinute: number;
  /** The most addresses counted in one window. */
  maxAddresses: number;
}

/** One minute's counts by address, in one map. */
class Window {
  readonly counts = new Map<string, number>();
  constructor(readonly end: number) {}
}

class MinuteCounter {
  private window = new Window(0);
  /** The window was full, and whether that was told (once a window). */
  private full = false;
  private told = false;

  constructor(private readonly maxAddresses: number) {}

  private current(now: number): Window {
    if (now >= this.window.end) {
      this.window = new Window(Math.floor(now / WINDOW_MS) * WINDOW_MS + WINDOW_MS);
      this.full = false;
      this.told = false;
    }
    return this.window;
  }

  /** Adds one; the new count (0 when the address could not be counted). */
  add(key: string, now: number): number {
    const w = this.current(now);
    const n = w.counts.get(key);
    if (n === undefined && w.counts.size >= this.maxAddresses) {
      this.full = true;
      return 0;
    }
    const next = (n ?? 0) + 1;
    w.counts.set(key, next);
    return next;
  }

  count(key: string, now: number): number {
    return this.current(now).counts.get(key) ?? 0;
  }

  /** Whole seconds until the window frees (at least 1). */
  retryAfter(now: number): number {
    return Math.max(1, Math.ceil((this.current(now).end - now) / 1000));
  }

  /** True once per window that was full. */
  tellFull(): boolean {
    if (!this.full || this.told) return false;
    this.told = true;
    return true;
  }

  get size(): number {
    return this.window.counts.size;
  }
}

export class AddressLimits {
  private readonly requests: MinuteCounter;
  private readonly failures: MinuteCounter;

  constructor(private readonly settings: AddressLimitSettings) {
    this.requests = new MinuteCounter(settings.maxAddresses);
    this.failures = new MinuteCounter(settings.maxAddresses);
  }

  /** Counts a request from `key` (gateway/client-address `addressKey`); throws 429 past the limit. */
  request(key: string, now = Date.now()): void {
    const limit = this.settings.requestsPerMinute;
    if (limit > 0 && this.requests.add(key, now) > limit) {
      throw new RateLimitedError(this.requests.retryAfter(now));
    }
  }

  /** Before a call to auth for `key`: throws 429 while its failed authentications are past the limit. */
  mayAskAuth(key: string, now = Date.now()): void {
    const limit = this.settings.failuresPerMinute;
    if (limit > 0 && this.failures.count(key, now) >= limit) {
      throw new RateLimitedError(this.failures.retryAfter(now));
    }
  }

  /** An authentication from `key` failed (credentials given and refused). */
  failed(key: string, now = Date.now()): void {
    if (this.settings.failuresPerMinute > 0) this.failures.add(key, now);
  }

  /** True once per window in which an address went uncounted (the table full), for one log line. */
  tellFull(): boolean {
    const requests = this.requests.tellFull();
    return this.failures.tellFull() || requests;
  }

  /** Addresses counted in the current windows (requests, failures). */
  get sizes(): [number, number] {
    return [this.requests.size, this.failures.size];
  }
}
