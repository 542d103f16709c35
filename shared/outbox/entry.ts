/**
 * What an outbox holds and how a relay reads it: the entry, the fields a document carries while it has
 * entries, and the source a relay publishes from. Its own module so that the outbox (./index) and the
 * relay (./outbox-relay) both import it rather than each other.
 */
import type { TraceContext } from "../tracing/propagation";

export interface OutboxEntry<P = unknown> {
  /** Derived from the channel and what the entry announces: the same fact always has the same id. */
  id: string;
  channel: string;
  payload: P;
  recorded_at: Date;
  /**
   * The trace of the request that recorded the fact (tracing on only), so its handling continues that
   * trace wherever and whenever it happens (shared/tracing/propagation). Older entries have none.
   */
  trace?: TraceContext;
}

/** The two fields a document carries while it has facts to publish. */
export interface OutboxFields {
  outbox?: Record<string, OutboxEntry>;
  /**
   * How many entries `outbox` holds, absent when none: what the relay's query and its sparse index look
   * at, so the index holds only the documents with facts to publish.
   */
  outbox_size?: number;
}

/** A recorded entry and the document holding it. */
export interface PendingEntry {
  docId: string | number;
  entry: OutboxEntry;
}

/** How much waits in an outbox: what its metrics show (shared/runtime/start-outbox-relay). */
export interface Backlog {
  /** Documents holding at least one entry not yet published. */
  documents: number;
  /** When the oldest waiting entry was recorded (among the first documents read), or null. */
  oldest: Date | null;
}

/** The entries of one collection still to publish, and their acknowledgement. */
export interface OutboxSource {
  pending(limit: number): Promise<PendingEntry[]>;
  /** Removes the entry; a second acknowledgement (two relays) changes nothing. */
  acknowledge(p: PendingEntry): Promise<void>;
  /** What waits (read after each sweep when someone watches it). */
  backlog?(): Promise<Backlog>;
}
