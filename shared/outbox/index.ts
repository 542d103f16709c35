/**
 * The transactional outbox, in the only form both engines make atomic: the fact that must be published
 * is written into the same document as the change it announces, in the same insert or conditional
 * update (MongoDB and NeDB both apply a single-document write all or nothing). A relay then publishes
 * what is recorded and not yet acknowledged, and removes each entry once the channel has taken it.
 *
 * A crash between the change and the publication therefore loses nothing: the entry is still in the
 * document, and the next relay run (at start, on a timer, or after the next change) publishes it. A crash
 * between the publication and the acknowledgement publishes it a second time; entry ids are derived from
 * what they announce, so the channel drops such duplicates (JetStream's message id) and consumers,
 * idempotent per fact, ignore any that get through.
 */
import { createHash } from "node:crypto";
import type { Collection, Update } from "../storage";
import type { TraceContext } from "../tracing/propagation";
import type { Backlog, OutboxEntry, OutboxFields, OutboxSource, PendingEntry } from "./entry";

/** An entry for `channel` announcing the fact named by `key` (e.g. round and user of a join). */
export function outboxEntry<P>(
  channel: string,
  key: string,
  payload: P,
  now: Date,
  trace?: TraceContext,
): OutboxEntry<P> {
  const id = createHash("sha256").update(`${channel}\u0000${key}`).digest("hex").slice(0, 32);
  const entry: OutboxEntry<P> = { id, channel, payload, recorded_at: now };
  if (trace) entry.trace = trace;
  return entry;
}

/** The outbox fields of a document inserted together with its entries (none without entries). */
export function outboxOnInsert(entries: OutboxEntry[]): OutboxFields {
  if (entries.length === 0) return {};
  return { outbox: Object.fromEntries(entries.map((e) => [e.id, e])), outbox_size: entries.length };
}

/** `update` extended so that it also records `entries` (same write, so the same atomicity). */
export function withOutboxEntries(update: Update, entries: OutboxEntry[]): Update {
  const set = { ...((update.$set ?? {}) as Record<string, unknown>) };
  for (const entry of entries) set[`outbox.${entry.id}`] = entry;
  const inc = (update.$inc ?? {}) as Record<string, number>;
  return { ...update, $set: set, $inc: { ...inc, outbox_size: entries.length } };
}

export class DocumentOutbox<T extends { _id: string | number } & OutboxFields> implements OutboxSource {
  /** Removals asked for and not yet written, by document. */
  private readonly batches = new Map<string | number, AckBatch>();
  /** Documents whose removal write is under way; their next batch is flushed when it ends. */
  private readonly flushing = new Set<string | number>();

  constructor(private readonly docs: Collection<T>) {}

  /**
   * Sparse, and the field goes when the last entry does: an index holding every document under one key
   * (0, or absent) made each write of any document cost a pass over all of them in NeDB, whose index
   * keeps a key's documents in one array (a join in a store of 100,000 rounds copied that array twice).
   */
  async init(): Promise<void> {
    await this.docs.updateMany({ outbox_size: 0 }, { $unset: { outbox_size: true } });
    await this.docs.createIndex({ fields: ["outbox_size"], sparse: true });
  }

  /**
   * Documents with entries (counted on the sparse index) and the oldest entry among the first
   * `sample` of them: exact while fewer wait, a lower bound of the age beyond.
   */
  async backlog(sample = 100): Promise<Backlog> {
    const [documents, first] = await Promise.all([
      this.docs.count({ outbox_size: { $gt: 0 } }),
      this.pending(sample),
    ]);
    return { documents, oldest: first.length > 0 ? new Date(first[0].entry.recorded_at) : null };
  }

  async pending(limit: number): Promise<PendingEntry[]> {
    const docs = await this.docs.find({ outbox_size: { $gt: 0 } }, { limit });
    return docs
      .flatMap((d) => Object.values(d.outbox ?? {}).map((entry) => ({ docId: d._id, entry })))
      .sort((a, b) => new Date(a.entry.recorded_at).getTime() - new Date(b.entry.recorded_at).getTime());
  }

  /**
   * Removals asked for in one turn of the event loop go out as one write per document (a stampede of
   * joins acknowledges a hundred entries of one round: one write instead of a hundred, each of which
   * rewrote the whole round). A document's next batch waits for the write of the one before.
   */
  acknowledge(p: PendingEntry): Promise<void> {
    let batch = this.batches.get(p.docId);
    if (!batch) {
      batch = { ids: new Set(), waiters: [] };
      this.batches.set(p.docId, batch);
      if (!this.flushing.has(p.docId)) setImmediate(() => void this.flush(p.docId));
    }
    batch.ids.add(p.entry.id);
    return new Promise((resolve, reject) => batch.waiters.push({ resolve, reject }));
  }

  private async flush(docId: string | number): Promise<void> {
    const batch = this.batches.get(docId);
    if (!batch) return;
    this.batches.delete(docId);
    this.flushing.add(docId);
    try {
      await this.remove(docId, [...batch.ids]);
      for (const w of batch.waiters) w.resolve();
    } catch (err) {
      for (const w of batch.waiters) w.reject(err);
    } finally {
      this.flushing.delete(docId);
      if (this.batches.has(docId)) setImmediate(() => void this.flush(docId));
    }
  }

  /**
   * Drops the entries recorded before `before` that are still there, and tells `onDrop` of each one it
   * removed (an entry a relay published meanwhile is not dropped, and not told): the facts no channel
   * took within the retention (docs/decisions/0041-durable-facts.md). Walks the documents
   * with entries (the sparse index) in pages by `_id`; resolves to how many entries went.
   */
  async dropOlderThan(before: Date, onDrop: (dropped: PendingEntry) => void): Promise<number> {
    let dropped = 0;
    let after: string | number | undefined;
    for (;;) {
      const filter = after === undefined ? {} : { _id: { $gt: after } };
      const docs = await this.docs.find(
        { ...filter, outbox_size: { $gt: 0 } },
        { sort: { _id: 1 }, limit: EXPIRY_PAGE },
      );
      for (const doc of docs) {
        const old = Object.values(doc.outbox ?? {}).filter(
          (e) => new Date(e.recorded_at).getTime() < before.getTime(),
        );
        for (const entry of old) {
          if ((await this.remove(doc._id, [entry.id])) === 0) continue;
          dropped++;
          onDrop({ docId: doc._id, entry });
        }
      }
      if (docs.length < EXPIRY_PAGE) return dropped;
      after = docs[docs.length - 1]._id;
    }
  }

  /**
   * Removes the entries; a second removal (two relays) changes nothing. Resolves to how many of them
   * this call removed.
   */
  private async remove(docId: string | number, ids: string[]): Promise<number> {
    const unset = Object.fromEntries(ids.map((id) => [`outbox.${id}`, true]));
    const present = Object.fromEntries(ids.map((id) => [`outbox.${id}`, { $exists: true }]));
    // All of them there: they go in one write, with the count if they were the last.
    const wereLast = await this.docs.updateOne(
      { _id: docId, ...present, outbox_size: ids.length },
      { $unset: { ...unset, outbox_size: true } },
    );
    if (wereLast > 0) return ids.length;
    const wereThere = await this.docs.updateOne(
      { _id: docId, ...present },
      { $unset: unset, $inc: { outbox_size: -ids.length } },
    );
    if (wereThere > 0) return ids.length;
    // Some were already removed (another relay): one by one, each only if still there.
    let removed = 0;
    if (ids.length > 1) for (const id of ids) removed += await this.remove(docId, [id]);
    return removed;
  }
}

/** Documents read per query by `dropOlderThan`. */
const EXPIRY_PAGE = 500;

/** Entries of one document to remove in one write, and who waits for it. */
interface AckBatch {
  ids: Set<string>;
  waiters: { resolve: () => void; reject: (err: unknown) => void }[];
}

export type { Backlog, OutboxEntry, OutboxFields, OutboxSource, PendingEntry } from "./entry";
export { OutboxRelay, type RelayOptions, type Publish } from "./outbox-relay";
export {
  outboxExpiryTask,
  OUTBOX_RETENTION_MS,
  OUTBOX_SWEEP_INTERVAL_MS,
  type ExpiringOutbox,
} from "./expiry";
