/**
 * Answers of per-caller reads kept for a moment in the gateway, so a hot read is served without the
 * hop to the service (the "microcache"). The service says how long its answer stays exactly right
 * (`ctx.meta.$freshUntil`, e.g. until a round's seconds_to_end ticks), the gateway caps that at
 * RESPONSE_CACHE_MS, and entries are grouped by a tag (the round id) so an event that changes the
 * thing (`round.member.joined`) drops every caller's answer at once. Only 200s are kept.
 */
import { byteLengthOf, type JsonBody } from "./write-json";

/** A kept answer and its length in bytes, counted once when kept rather than on every write. */
export interface KeptJson {
  json: JsonBody;
  bytes: number;
}

interface Entry extends KeptJson {
  expiresAt: number;
  /** An answer shared by every caller but these (the service's `$sameForAllBut`). */
  except?: ReadonlySet<string>;
}

export class ResponseCache {
  private readonly byTag = new Map<string, Map<string, Entry>>();
  private count = 0;

  constructor(
    private readonly maxAgeMs: number,
    private readonly maxEntries: number,
  ) {}

  get enabled(): boolean {
    return this.maxAgeMs > 0 && this.maxEntries > 0;
  }

  /**
   * The answer kept under `key`, with its length; a shared one only if `callerId` is not among its
   * exceptions.
   */
  get(tag: string, key: string, now: number, callerId?: string): KeptJson | null {
    const entry = this.byTag.get(tag)?.get(key);
    if (!entry || (entry.except && (callerId === undefined || entry.except.has(callerId)))) return null;
    if (now >= entry.expiresAt) {
      this.delete(tag, key);
      return null;
    }
    return entry;
  }

  /**
   * Keeps `json` until `freshUntil` (epoch ms, from the service) or the cap, whichever is first; with
   * `except`, as an answer for every caller but those.
   */
  set(
    tag: string,
    key: string,
    json: JsonBody,
    freshUntil: number,
    now: number,
    except?: ReadonlySet<string>,
  ): void {
    if (!this.enabled) return;
    const expiresAt = Math.min(freshUntil, now + this.maxAgeMs);
    if (expiresAt <= now) return;
    while (this.count >= this.maxEntries) this.dropOldestTag();
    let entries = this.byTag.get(tag);
    if (!entries) {
      entries = new Map();
      this.byTag.set(tag, entries);
    }
    if (!entries.has(key)) this.count++;
    const bytes = byteLengthOf(json);
    entries.set(key, except ? { json, bytes, expiresAt, except } : { json, bytes, expiresAt });
  }

  dropTag(tag: string): void {
    const entries = this.byTag.get(tag);
    if (!entries) return;
    this.count -= entries.size;
    this.byTag.delete(tag);
  }

  clear(): void {
    this.byTag.clear();
    this.count = 0;
  }

  get size(): number {
    return this.count;
  }

  private delete(tag: string, key: string): void {
    const entries = this.byTag.get(tag);
    if (entries?.delete(key)) this.count--;
    if (entries?.size === 0) this.byTag.delete(tag);
  }

  private dropOldestTag(): void {
    const oldest = this.byTag.keys().next().value;
    if (oldest === undefined) {
      this.count = 0;
      return;
    }
    this.dropTag(oldest);
  }
}
