/**
 * A round as the rounds collection stores it, with its members and the joins it still has to announce.
 * Its own module so that the repository and the join batching, which both use it, import it from here
 * rather than from each other.
 */
import type { DeepReadonly } from "../../shared/storage";
import type { OutboxFields } from "../../shared/outbox";
import type { RoundLocation } from "../../shared/contracts/round";

export interface MemberEntry {
  status: "joined";
  joined_at: Date;
  attributes: number[];
}

/** A round as read on the hot path: not to be changed (Collection.readById). */
export type RoundRead = DeepReadonly<RoundDoc>;

/** A round, with the joins it still has to announce in its outbox (written by the join itself). */
export interface RoundDoc extends OutboxFields {
  _id: string;
  uniq_id: string;
  owner_id: string;
  item_id: string;
  entry_fee: string;
  currency: string;
  variant: "standard" | "event";
  is_active: boolean;
  is_private: boolean;
  is_ended: boolean;
  is_event: boolean;
  start_time: Date | null;
  end_time: Date | null;
  max_members_count: number;
  members_count: number;
  /** Incremented by every change; cached snapshots are keyed by it, so a stale one is never read. */
  rev: number;
  members: Record<string, MemberEntry>;
  favorites: Record<string, true>;
  question: { id: number | null; theme: string; emoji: string | null; category: string };
  certificate: { id: string; text: string; discount_percent: number };
  locations: RoundLocation[];
  created_at: Date;
}
