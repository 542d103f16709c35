/**
 * Rounds this process has seen full. Seats only ever fill up: no operation removes a member or lowers
 * `max_members_count`, so a round once full stays full with the same members, and what it was seen with
 * answers every later join exactly. A stampede's losers are then refused from memory, without reading
 * the round (a copy of the whole document, members and all) or queuing behind the winners' writes.
 */
import type { RoundRead } from "./round-doc";

export type FullRound = Pick<
  RoundRead,
  | "_id"
  | "owner_id"
  | "is_private"
  | "is_active"
  | "is_ended"
  | "end_time"
  | "members_count"
  | "max_members_count"
  | "members"
>;

export class FullRounds {
  private readonly rounds = new Map<string, FullRound>();

  /** At most `capacity` rounds are kept; the oldest goes first (it is only a shortcut). */
  constructor(private readonly capacity = 10_000) {}

  get(roundId: string): FullRound | undefined {
    return this.rounds.get(roundId);
  }

  /** Keeps the round if it is full (a round not full is never kept: it can still change). */
  remember(doc: RoundRead): void {
    if (doc.members_count < doc.max_members_count || this.rounds.has(doc._id)) return;
    if (this.rounds.size >= this.capacity) {
      const oldest = this.rounds.keys().next().value;
      if (oldest !== undefined) this.rounds.delete(oldest);
    }
    const { _id, owner_id, is_private, is_active, is_ended, end_time, members_count } = doc;
    this.rounds.set(_id, {
      _id,
      owner_id,
      is_private,
      is_active,
      is_ended,
      end_time,
      members_count,
      max_members_count: doc.max_members_count,
      members: doc.members,
    });
  }
}
