/**
 * Verified access tokens, remembered by the gateway so a hot read does not pay the calls to auth and
 * users (two hops over NATS when distributed) on every request. An entry lives until the token expires
 * or AUTH_CACHE_SECONDS pass, whichever is first, and goes at once when its user is removed
 * (`user.removed`). Bounded: past `maxEntries` the oldest entry is dropped.
 */
import type { Caller } from "../../shared/contracts/common";

interface Entry {
  caller: Caller;
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
    const entry = this.entries.get(token);
    if (!entry) return null;
    if (entry.expiresAt <= now) {
      this.entries.delete(token);
      return null;
    }
    return entry.caller;
  }

  /** Remembers a token auth has just verified; `expSeconds` is the token's own expiry (JWT `exp`). */
  set(token: string, caller: Caller, expSeconds: number, now: number): void {
    if (!this.enabled) return;
    const expiresAt = Math.min(now + this.ttlMs, expSeconds * 1000);
    if (!(expiresAt > now)) return; // expired, or no usable expiry: never kept

    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(token, { caller, expiresAt });
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
