/**
 * API keys auth accepted lately, remembered by the gateway so that a request with one is a call to its
 * service alone, not first a call to auth (decision 0046). An acceptance is kept for AUTH_CACHE_SECONDS
 * per key and scope; a refusal is never kept, so a wrong key or scope is auth's to answer every time.
 * Every gateway forgets a key when auth revokes it (`api-key.revoked`), and every key when it
 * reconnects to the transporter.
 */
import type { VerifyApiKeyResult } from "../../shared/contracts/auth";
import { LocalCache } from "../../shared/runtime/local-cache";

type Scope = VerifyApiKeyResult["scope"];

export class ApiKeyCache {
  /** The key's id, by scope and the key as presented. */
  private readonly accepted: LocalCache<string>;

  constructor(ttlMs: number, maxEntries: number) {
    this.accepted = new LocalCache(ttlMs, maxEntries);
  }

  /** The id of a key accepted for this scope: remembered, or asked of auth (whose refusal is thrown). */
  async keyIdOf(
    key: string,
    scope: Scope,
    askAuth: (key: string, scope: Scope) => Promise<VerifyApiKeyResult>,
    now: number,
  ): Promise<string> {
    const slot = `${scope}\u0000${key}`;
    const known = this.accepted.get(slot, now);
    if (known !== undefined) return known;
    // An acceptance asked before a revocation reached this gateway is not kept after it.
    const forgettings = this.accepted.forgettings;
    const { key_id } = await askAuth(key, scope);
    if (forgettings === this.accepted.forgettings) this.accepted.set(slot, key_id, now);
    return key_id;
  }

  forget(keyId: string): void {
    this.accepted.deleteWhere((id) => id === keyId);
  }

  clear(): void {
    this.accepted.clear();
  }

  get size(): number {
    return this.accepted.size;
  }
}
