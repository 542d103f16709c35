/**
 * Answers of reads kept in the gateway, so a read is served again without the hop to the service (the
 * "microcache"). The service says how long its answer stays exactly right (`ctx.meta.$freshUntil`, e.g.
 * until a round's seconds_to_end ticks); the gateway caps that at RESPONSE_CACHE_MS for a caller's own
 * answer, and at CACHE_TTL for one the service says is every caller's but a few (decision 0045: what
 * changes it is announced). Entries are grouped by a tag (the round id) so an event that changes the
 * thing (`round.member.joined`) drops every caller's answer at once. Only 200s are kept.
 */
import { secondsLeft } from "../../shared/format";
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
  /** `json` lacks its last part, a round's seconds_to_end counting down to this instant, and its `}`. */
  countdownTo?: number;
}

/** What to keep, and for how long the service says it holds. */
export interface Keep {
  json: JsonBody;
  /** Epoch ms; +∞ when only the caps apply. */
  freshUntil: number;
  now: number;
  /** Kept for every caller but these (`$sameForAllBut`): the longer cap applies. */
  except?: ReadonlySet<string>;
  /** `json` is the answer without its seconds_to_end and closing brace, which count down to this. */
  countdownTo?: number;
  /** `version` when the call that answered was made: an answer older than a drop of its tag is not kept. */
  asked?: number;
}

export interface ResponseCacheLimits {
  /** RESPONSE_CACHE_MS: the longest a caller's own answer is kept; 0: nothing is kept. */
  maxAgeMs: number;
  maxEntries: number;
  /** The longest an answer shared by all but a few is kept (CACHE_TTL, as the services keep theirs). */
  sharedMaxAgeMs?: number;
  /** RESPONSE_CACHE_MB, in bytes. */
  maxBytes?: number;
}

/**
 * Drops remembered to tell a late answer from a fresh one: at ~300 joins a second, minutes of them,
 * far longer than a request may live (HTTP_REQUEST_TIMEOUT_MS). Past that, answers to calls made before
 * the oldest remembered drop are not kept at all.
 */
const DROPS_REMEMBERED = 100_000;

/**
 * Most bytes of answers one gateway keeps: 128 MiB, the hot rounds' pages of a busy hour at a few KB
 * each, well within the gateway's heap cap (deploy/), so the microcache never becomes the reason a
 * gateway runs out of memory.
 */
export const RESPONSE_CACHE_BYTES = 128 * 1024 * 1024;

export class ResponseCache {
  private readonly byTag = new Map<string, Map<string, Entry>>();
  private count = 0;
  private bytes = 0;
  private readonly maxAgeMs: number;
  private readonly maxEntries: number;
  private readonly sharedMaxAgeMs: number;
  private readonly maxBytes: number;
  /** Counts drops and clears; a call records it when made (`asked`). */
  private changes = 0;
  /** The change at which each tag was last dropped, oldest first. */
  private readonly dropped = new Map<string, number>();
  /** The newest change no longer known tag by tag (forgotten drops, a clear). */
  private unknownUpTo = 0;
  /** Users removed lately, until when an answer that names them is not kept long (`userRemoved`). */
  private readonly removed = new Map<string, number>();

  constructor(limits: ResponseCacheLimits) {
    this.maxAgeMs = limits.maxAgeMs;
    this.maxEntries = limits.maxEntries;
    this.sharedMaxAgeMs = limits.sharedMaxAgeMs ?? limits.maxAgeMs;
    this.maxBytes = limits.maxBytes ?? Number.POSITIVE_INFINITY;
  }

  get enabled(): boolean {
    return this.maxAgeMs > 0 && this.maxEntries > 0;
  }

  /** What a call records when it is made, for `Keep.asked`. */
  get version(): number {
    return this.changes;
  }

  /**
   * The answer kept under `key`, with its length; a shared one only if `callerId` is not among its
   * exceptions; a counting-down one completed for `now`.
   */
  get(tag: string, key: string, now: number, callerId?: string): KeptJson | null {
    const entry = this.byTag.get(tag)?.get(key);
    if (!entry || (entry.except && (callerId === undefined || entry.except.has(callerId)))) return null;
    if (now >= entry.expiresAt) {
      this.delete(tag, key);
      return null;
    }
    if (entry.countdownTo === undefined) return entry;
    const tail = `${secondsLeft(entry.countdownTo, now)}}`;
    if (typeof entry.json === "string") return { json: entry.json + tail, bytes: entry.bytes + tail.length };
    const head = Buffer.isBuffer(entry.json) ? [entry.json] : entry.json;
    return { json: [...head, Buffer.from(tail)], bytes: entry.bytes + tail.length };
  }

  /** Keeps an answer until the service's `freshUntil` or the cap, whichever is first. */
  set(tag: string, key: string, keep: Keep): void {
    if (!this.enabled || (keep.asked !== undefined && this.changedSince(tag, keep.asked))) return;
    const cap =
      keep.except && !this.namesRemoved(keep.except, keep.now) ? this.sharedMaxAgeMs : this.maxAgeMs;
    const expiresAt = Math.min(keep.freshUntil, keep.now + cap);
    if (expiresAt <= keep.now) return;
    const bytes = byteLengthOf(keep.json);
    if (bytes > this.maxBytes) return;
    this.delete(tag, key);
    while (this.count > 0 && (this.count >= this.maxEntries || this.bytes + bytes > this.maxBytes)) {
      this.removeTag(this.byTag.keys().next().value as string);
    }
    let entries = this.byTag.get(tag);
    if (!entries) {
      entries = new Map();
      this.byTag.set(tag, entries);
    }
    const entry: Entry = { json: keep.json, bytes, expiresAt };
    if (keep.except) entry.except = keep.except;
    if (keep.countdownTo !== undefined) entry.countdownTo = keep.countdownTo;
    entries.set(key, entry);
    this.count++;
    this.bytes += bytes;
  }

  /** The thing behind `tag` changed: its answers go, and answers to calls made before now are not kept. */
  dropTag(tag: string): void {
    this.removeTag(tag);
    this.dropped.delete(tag);
    this.dropped.set(tag, ++this.changes);
    if (this.dropped.size > DROPS_REMEMBERED) {
      const [oldest, at] = this.dropped.entries().next().value as [string, number];
      this.dropped.delete(oldest);
      this.unknownUpTo = at;
    }
  }

  /**
   * A user was removed: every answer goes (lists and rounds may name them). For the shared cap's length
   * after, an answer everyone's but a list that still names them (a round whose service had not heard of
   * the removal yet when it answered) is kept no longer than a caller's own.
   */
  userRemoved(userId: string, now: number): void {
    this.clear();
    for (const [id, until] of this.removed) if (until <= now) this.removed.delete(id);
    this.removed.set(userId, now + this.sharedMaxAgeMs);
  }

  /** Everything may have changed: every answer goes, and none to a call made before now is kept. */
  clear(): void {
    this.byTag.clear();
    this.dropped.clear();
    this.count = 0;
    this.bytes = 0;
    this.unknownUpTo = ++this.changes;
  }

  get size(): number {
    return this.count;
  }

  /** Bytes of the answers kept. */
  get byteSize(): number {
    return this.bytes;
  }

  private namesRemoved(except: ReadonlySet<string>, now: number): boolean {
    for (const [id, until] of this.removed) if (until > now && except.has(id)) return true;
    return false;
  }

  private changedSince(tag: string, asked: number): boolean {
    return this.unknownUpTo > asked || (this.dropped.get(tag) ?? 0) > asked;
  }

  private delete(tag: string, key: string): void {
    const entries = this.byTag.get(tag);
    const entry = entries?.get(key);
    if (!entries || !entry) return;
    entries.delete(key);
    this.count--;
    this.bytes -= entry.bytes;
    if (entries.size === 0) this.byTag.delete(tag);
  }

  private removeTag(tag: string): void {
    const entries = this.byTag.get(tag);
    if (!entries) return;
    for (const entry of entries.values()) this.bytes -= entry.bytes;
    this.count -= entries.size;
    this.byTag.delete(tag);
  }
}
