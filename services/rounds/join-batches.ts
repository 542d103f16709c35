/**
 * Joins of one round that arrive together go to the store as one conditional update. In a stampede the
 * winners used to queue one write each behind each other on the same document (each a copy of the whole
 * round, members and outbox, written out again): a hundred seats were a hundred writes and a hundred
 * revisions, each with its own snapshot to build. A round's first join is written at once; joins that
 * arrive while a write of their round is under way wait for it and go together, with those of the turn
 * after it, as the next batch. Most joins of a mixed workload meet no other join of their round, and
 * waiting for the next turn to gather a batch cost each of them a turn of the event loop
 * (docs/decisions/0071-join-batches.md).
 *
 * Exactness stays with the store, not with this batching: the batch's update holds every condition of a
 * single join (active, not ended, none of its users a member yet) and asks for as many free seats as it
 * adds (`members_count <= max - k`), so it applies to all its joins or to none. It takes at most as many
 * joins as the freshest round this process saw has seats left (seats only fill up, so that count is never
 * too small); the others are answered "not added", and the caller reads the round again to say why, as
 * after any refused update. When the batch is refused (another process took seats, a user joined
 * meanwhile), its joins are written one by one, each with its own conditions, as before.
 *
 * One batch per round is in the store at a time: what arrives while it is written is the next batch.
 */
import type { OutboxEntry } from "../../shared/outbox";
import type { MemberEntry, RoundDoc, RoundRead } from "./round-doc";

/** What a join knows of its round: the fixed fields its update and announcement need, and the count. */
export type JoinTarget = Pick<
  RoundRead,
  "_id" | "uniq_id" | "entry_fee" | "currency" | "max_members_count" | "members_count"
>;

/** One user's join: the member to add and its announcement, recorded in the same write. */
export interface SeatClaim {
  userId: string;
  member: MemberEntry;
  announcement: OutboxEntry;
  now: Date;
}

/** The conditional update adding every claim to the round, or null when any condition failed. */
export type ClaimSeats = (round: JoinTarget, claims: SeatClaim[]) => Promise<RoundDoc | null>;

interface Waiting {
  claim: SeatClaim;
  resolve(doc: RoundDoc | null): void;
  reject(err: unknown): void;
}

interface RoundBatch {
  /** The freshest state of the round seen here (the most members). */
  round: JoinTarget;
  waiting: Waiting[];
}

export class JoinBatches {
  /** Rounds with joins waiting or being written; a round leaves when it has neither. */
  private readonly rounds = new Map<string, RoundBatch>();

  constructor(private readonly claimSeats: ClaimSeats) {}

  /** Resolves to the round after the write that added the claim, or null when it was not added. */
  add(round: JoinTarget, claim: SeatClaim): Promise<RoundDoc | null> {
    // A caller with another max_members_count (stale) is refused by its own conditions, not the batch's.
    const key = `${round._id}\u0000${round.max_members_count}`;
    let batch = this.rounds.get(key);
    if (!batch) {
      batch = { round, waiting: [] };
      this.rounds.set(key, batch);
      const started = batch;
      // Once the caller's synchronous part is done: joins asked for in the same go are one batch.
      queueMicrotask(() => void this.drain(key, started));
    } else if (round.members_count > batch.round.members_count) {
      batch.round = round;
    }
    const waiting = batch.waiting;
    return new Promise((resolve, reject) => waiting.push({ claim, resolve, reject }));
  }

  /** Writes the round's batches one after another until none waits. */
  private async drain(key: string, batch: RoundBatch): Promise<void> {
    while (batch.waiting.length > 0) {
      const waiting = batch.waiting;
      batch.waiting = [];
      await this.write(batch, waiting);
      // What arrived during the write is the next batch, once this turn's arrivals are in too.
      if (batch.waiting.length > 0) await new Promise((resolve) => setImmediate(resolve));
    }
    this.rounds.delete(key);
  }

  private async write(batch: RoundBatch, waiting: Waiting[]): Promise<void> {
    const seats = batch.round.max_members_count - batch.round.members_count;
    const users = new Set<string>();
    const taken: Waiting[] = [];
    const left: Waiting[] = [];
    for (const w of waiting) {
      // A user's second request in the batch is not added; the caller then finds the first one's seat.
      if (taken.length < seats && !users.has(w.claim.userId)) {
        users.add(w.claim.userId);
        taken.push(w);
      } else left.push(w);
    }
    try {
      const doc =
        taken.length > 0
          ? await this.claim(
              batch,
              taken.map((w) => w.claim),
            )
          : null;
      if (doc || taken.length <= 1) for (const w of taken) w.resolve(doc);
      else await Promise.all(taken.map((w) => this.writeAlone(batch, w)));
    } catch (err) {
      for (const w of taken) w.reject(err);
    }
    // After the winners, so that they have told the process the round is full before these ask why.
    for (const w of left) w.resolve(null);
  }

  /** A join of a refused batch, with its own conditions only. */
  private async writeAlone(batch: RoundBatch, w: Waiting): Promise<void> {
    try {
      w.resolve(await this.claim(batch, [w.claim]));
    } catch (err) {
      w.reject(err);
    }
  }

  private async claim(batch: RoundBatch, claims: SeatClaim[]): Promise<RoundDoc | null> {
    const doc = await this.claimSeats(batch.round, claims);
    if (doc && doc.members_count > batch.round.members_count) batch.round = doc;
    return doc;
  }
}
