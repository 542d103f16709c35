/**
 * Verified access tokens, remembered by the gateway so a hot read does not pay the calls to auth and
 * users (two hops over NATS when distributed) on every request. An entry lives until the token expires
 * or AUTH_CACHE_SECONDS pass, whichever is first, and goes at once when its user is removed
 * (`user.removed`). Bounded: past `maxEntries` the least recently used entry is dropped (LocalCache).
 * A refresh may present a token past its expiry (up to REFRESH_TOKEN_TTL): `getForRefresh`
 * answers for a token verified (or issued by auth through this gateway) within AUTH_CACHE_SECONDS, so
 * the refresh pays no signature verification (decision 0132).
 */
import type { Caller } from "../../shared/contracts/common";
import { LocalCache } from "../../shared/runtime/local-cache";

interface Entry {
  caller: Caller;
  /** The token's own expiry (ms). */
  expiresAt: number;
}

export class TokenCache {
  /** Each entry kept for AUTH_CACHE_SECONDS since the token was verified. */
  private readonly entries: LocalCache<Entry>;

  constructor(ttlMs: number, maxEntries: number) {
    this.entries = new LocalCache(ttlMs, maxEntries);
  }

  get enabled(): boolean {
    return this.entries.enabled;
  }

  get(token: string, now: number): Caller | null {
    return this.lookup(token, now, 0);
  }

  /** The caller of a token presented to refresh, expired up to `maxAgeMs` ago, if it was verified lately. */
  getForRefresh(token: string, now: number, maxAgeMs: number): Caller | null {
    return this.lookup(token, now, maxAgeMs);
  }

  private lookup(token: string, now: number, expiredForMs: number): Caller | null {
    const entry = this.entries.get(token, now);
    // Past its expiry an entry stays (for AUTH_CACHE_SECONDS) only for a refresh that presents it.
    return entry && entry.expiresAt + expiredForMs > now ? entry.caller : null;
  }

  /** Remembers a token auth has just verified or issued; `expSeconds` is its own expiry (JWT `exp`). */
  set(token: string, caller: Caller, expSeconds: number, now: number): void {
    if (!this.enabled) return;
    const expiresAt = expSeconds * 1000;
    if (!(expiresAt > now)) return; // expired, or no usable expiry: never kept
    this.entries.set(token, { caller, expiresAt }, now);
  }

  clear(): void {
    this.entries.clear();
  }

  forgetUser(userId: string): void {
    this.entries.deleteWhere((entry) => entry.caller.id === userId);
  }

  get size(): number {
    return this.entries.size;
  }
}
