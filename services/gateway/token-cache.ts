/**
 * Verified access tokens, remembered by the gateway so a hot read does not pay the calls to auth and
 * users (two hops over NATS when distributed) on every request. An entry lives until the token expires
 * or AUTH_CACHE_SECONDS pass, whichever is first, and goes at once when its user is removed
 * (`user.removed`). Bounded: past `maxEntries` the oldest entry is dropped.
 * A refresh may present a token past its expiry (up to REFRESH_ACCESS_TOKEN_MAX_AGE): `getForRefresh`
 * answers for a token verified (or issued by auth through this gateway) within AUTH_CACHE_SECONDS, so
 * the refresh pays no signature verification (decision 0132).
 */
import type { Caller } from "../../shared/contracts/common";

interface Entry {
  caller: Caller;
  /** When AUTH_CACHE_SECONDS have passed since the token was verified (ms). */
  keptUntil: number;
  /** The token's own expiry (ms). */
  expiresAt: number;
}

export class TokenCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}

  get enabled(): boolean {
    return this.ttlMs > 0 && this.maxEntries > 0;
  }

  get(token: string, now: number): Caller | null {
    return this.lookup(token, now, 0);
  }

  /** The caller of a token presented to refresh, expired up to `maxAgeMs` ago, if it was verified lately. */
  getForRefresh(token: string, now: number, maxAgeMs: number): Caller | null {
    return this.lookup(token, now, maxAgeMs);
  }

  private lookup(token: string, now: number, expiredForMs: number): Caller | null {
    const entry = this.entries.get(token);
    if (!entry) return null;
    if (entry.keptUntil <= now) {
      this.entries.delete(token);
      return null;
    }
    // Past its expiry an entry stays (until keptUntil) only for a refresh that presents it.
    return entry.expiresAt + expiredForMs > now ? entry.caller : null;
  }

  /** Remembers a token auth has just verified or issued; `expSeconds` is its own expiry (JWT `exp`). */
  set(token: string, caller: Caller, expSeconds: number, now: number): void {
    if (!this.enabled) return;
    const expiresAt = expSeconds * 1000;
    if (!(expiresAt > now)) return; // expired, or no usable expiry: never kept

    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(token, { caller, keptUntil: now + this.ttlMs, expiresAt });
  }

  clear(): void {
    this.entries.clear();
  }

  forgetUser(userId: string): void {
    for (const [token, entry] of this.entries) if (entry.caller.id === userId) this.entries.delete(token);
  }

  get size(): number {
    return this.entries.size;
  }
}
