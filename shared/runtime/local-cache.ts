/**
 * A small in-process cache in front of the shared one: bounded (past `maxEntries` the oldest entry goes)
 * and with a time to live, for values that a key fully determines (e.g. a round's snapshot at a
 * revision), so a hit skips the round trip to Redis.
 */
interface Entry<V> {
  value: V;
  expiresAt: number;
}

export class LocalCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private forgot = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}

  get(key: string, now = Date.now()): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: V, now = Date.now()): void {
    if (this.ttlMs <= 0 || this.maxEntries <= 0) return;
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, { value, expiresAt: now + this.ttlMs });
  }

  delete(key: string): void {
    this.forgot++;
    this.entries.delete(key);
  }

  /** Drops every entry whose value matches (a walk over all of them: for rare events on small caches). */
  deleteWhere(matches: (value: V) => boolean): void {
    this.forgot++;
    for (const [key, entry] of this.entries) if (matches(entry.value)) this.entries.delete(key);
  }

  clear(): void {
    this.forgot++;
    this.entries.clear();
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
    return this.ttlMs > 0 && this.maxEntries > 0;
  }

  get size(): number {
    return this.entries.size;
  }
}
