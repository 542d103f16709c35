/**
 * A small in-process cache in front of the shared one: bounded (past `maxEntries` the least recently
 * used entry goes) and with a time to live, for values that a key fully determines (e.g. a round's
 * snapshot at a revision), so a hit skips the round trip to Redis. lru-cache keeps the entries; its
 * clock is the time the caller gives (`now`, Date.now() by default), so a request judges every entry
 * at the one instant it started.
 */
import { LRUCache } from "lru-cache";

/**
 * Most entries in each of a process's caches of verified tokens, accepted API keys and active users:
 * 100,000 (some 0.4 KB a token, 40 MB at most), more callers than one process sees active within
 * AUTH_CACHE_SECONDS; past it the least recently used goes, which costs only a check again.
 */
export const AUTH_CACHE_ENTRIES = 100_000;

export class LocalCache<V extends NonNullable<unknown>> {
  private readonly entries: LRUCache<string, V> | null;
  /** The time of the call being served: lru-cache's clock (its `perf` option). */
  private at = 0;
  private forgot = 0;

  constructor(ttlMs: number, maxEntries: number) {
    this.entries =
      ttlMs > 0 && maxEntries > 0
        ? new LRUCache<string, V>({
            max: maxEntries,
            ttl: ttlMs,
            // Every call reads the time it was given, never one remembered from an earlier call.
            ttlResolution: 0,
            perf: { now: () => this.at },
          })
        : null;
  }

  get(key: string, now = Date.now()): V | undefined {
    this.at = now;
    return this.entries?.get(key);
  }

  /** `ttlMs`, when given, shortens this entry's life below the cache's own (never lengthens it). */
  set(key: string, value: V, now = Date.now(), ttlMs?: number): void {
    this.at = now;
    if (ttlMs !== undefined && !(ttlMs > 0)) return;
    const ttl = ttlMs !== undefined && this.entries ? Math.min(ttlMs, this.entries.ttl) : undefined;
    this.entries?.set(key, value, ttl === undefined ? undefined : { ttl });
  }

  delete(key: string): void {
    this.forgot++;
    this.entries?.delete(key);
  }

  /** Drops every entry whose value matches (a walk over all of them: for rare events on small caches). */
  deleteWhere(matches: (value: V) => boolean): void {
    this.forgot++;
    if (!this.entries) return;
    const gone: string[] = [];
    this.entries.forEach((value, key) => matches(value) && gone.push(key));
    for (const key of gone) this.entries.delete(key);
  }

  clear(): void {
    this.forgot++;
    this.entries?.clear();
  }

  /**
   * How many times something was deleted or cleared. A caller that asks elsewhere for a value to keep
   * compares it before and after the call: a change means the answer may predate what was forgotten
   * (an event that overtook the call), and is better not kept.
   */
  get forgettings(): number {
    return this.forgot;
  }

  /** Whether anything is ever kept (a time to live and a bound above 0). */
  get enabled(): boolean {
    return this.entries !== null;
  }

  get size(): number {
    return this.entries?.size ?? 0;
  }
}
