/**
 * The rounds collection. Members are a map keyed by user id (not an array) so that "not yet a member" is
 * `{"members.<id>": {$exists: false}}`, which MongoDB and NeDB read alike, and joining is one conditional
 * update: active, not ended, not full, not yet a member → add the member and count it.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { DuplicateKeyError, type Collection, type Filter, type Store } from "../../shared/storage";
import { DocumentOutbox, outboxEntry, withOutboxEntries, type PendingEntry } from "../../shared/outbox";
import type { TraceContext } from "../../shared/tracing/propagation";
import { Channels } from "../../shared/runtime/channels";
import type { CreateRoundParams, RoundMemberJoinedEvent } from "../../shared/contracts/rounds";
import { JoinBatches, type JoinTarget, type SeatClaim } from "./join-batches";
import type { MemberEntry, RoundDoc, RoundRead } from "./round-doc";

/** Short human-readable code, e.g. "R-7K2QX9" (no 0/O/1/I to avoid misreading). */
function newUniqId(): string {
  const alphabet = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ";
  const bytes = randomBytes(6);
  return `R-${Array.from(bytes, (b) => alphabet[b % alphabet.length]).join("")}`;
}

/** `round.member.joined` for a new member, as recorded in the round's outbox by the join. */
export function joinedEvent(
  round: Pick<RoundDoc, "_id" | "uniq_id" | "entry_fee" | "currency">,
  userId: string,
  member: MemberEntry,
): RoundMemberJoinedEvent {
  return {
    round_id: round._id,
    uniq_id: round.uniq_id,
    user_id: userId,
    attributes: member.attributes,
    entry_fee: round.entry_fee,
    currency: round.currency,
    joined_at: new Date(member.joined_at).toISOString(),
  };
}

/** The announcement of `userId`'s join still in the round's outbox, if any. */
export function pendingJoin(doc: RoundDoc, userId: string): PendingEntry | null {
  const entry = Object.values(doc.outbox ?? {}).find(
    (e) =>
      e.channel === Channels.roundMemberJoined && (e.payload as RoundMemberJoinedEvent).user_id === userId,
  );
  return entry ? { docId: doc._id, entry } : null;
}

export class RoundsRepository {
  private readonly rounds: Collection<RoundDoc>;
  /** Joins recorded and not yet published (see shared/outbox). */
  readonly outbox: DocumentOutbox<RoundDoc>;
  private readonly joins: JoinBatches;

  constructor(
    store: Store,
    private readonly drawUniqId: () => string = newUniqId,
  ) {
    this.rounds = store.collection<RoundDoc>("rounds");
    this.outbox = new DocumentOutbox(this.rounds);
    this.joins = new JoinBatches((round, claims) => this.claimSeats(round, claims));
  }

  async init(): Promise<void> {
    await this.rounds.createIndex({ fields: ["uniq_id"], unique: true });
    await this.outbox.init();
  }

  /** The round as stored, for reading only (see Collection.readById). */
  findById(id: string): Promise<RoundRead | null> {
    return this.rounds.readById(id);
  }

  async create(input: CreateRoundParams, currency: string, now: Date): Promise<RoundDoc> {
    // Members given at creation (fixtures) joined no round through the API: nothing to announce.
    const joined: MemberEntry = { status: "joined", joined_at: now, attributes: [] };
    const members = Object.fromEntries(input.member_ids.map((id) => [id, joined]));
    const doc: Omit<RoundDoc, "uniq_id"> = {
      _id: input.id ?? randomUUID(),
      owner_id: input.owner_id,
      item_id: input.item_id,
      entry_fee: Number(input.entry_fee).toFixed(2),
      currency,
      variant: input.variant ?? (input.is_event ? "event" : "standard"),
      is_active: input.is_active,
      is_private: input.is_private,
      is_ended: input.is_ended,
      is_event: input.is_event,
      start_time: input.start_time ? new Date(input.start_time) : null,
      end_time: input.end_time ? new Date(input.end_time) : null,
      max_members_count: input.max_members_count,
      members_count: Object.keys(members).length,
      rev: 1,
      members,
      favorites: Object.fromEntries(input.favorite_of.map((id) => [id, true as const])),
      question: {
        id: input.question.id ?? null,
        theme: input.question.theme,
        emoji: input.question.emoji ?? null,
        category: input.question.category,
      },
      certificate: { id: randomUUID(), ...input.certificate },
      locations: input.locations,
      created_at: now,
    };
    // Six characters of 32 give about a billion codes: by 10,000 rounds a drawn code is taken about once
    // in 20 runs, so a taken code is drawn again. A taken id is the caller's duplicate, reported as is.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.rounds.insertOne({ ...doc, uniq_id: this.drawUniqId() });
      } catch (err) {
        const retry = err instanceof DuplicateKeyError && attempt < 5 && !(await this.findById(doc._id));
        if (!retry) throw err;
      }
    }
  }

  /**
   * Adds the member in one atomic conditional update, which also records `round.member.joined` in the
   * round's outbox: the seat and its announcement are stored together or not at all. Joins of the round
   * that arrive together share that update (JoinBatches). Resolves to the round after the update,
   * or null when any condition failed (the caller reads the round again to say which).
   */
  addMember(
    round: JoinTarget,
    userId: string,
    attributes: number[],
    now: Date,
    trace?: TraceContext,
  ): Promise<RoundDoc | null> {
    const member: MemberEntry = { status: "joined", joined_at: now, attributes };
    const announcement = outboxEntry(
      Channels.roundMemberJoined,
      `${round._id}:${userId}`,
      joinedEvent(round, userId, member),
      now,
      trace,
    );
    return this.joins.add(round, { userId, member, announcement, now });
  }

  /** Every claim's seat in one conditional update: the conditions of each join, and enough seats for all. */
  private claimSeats(round: JoinTarget, claims: SeatClaim[]): Promise<RoundDoc | null> {
    const now = new Date(Math.max(...claims.map((c) => c.now.getTime())));
    const filter: Filter = {
      _id: round._id,
      is_active: true,
      is_ended: false,
      $or: [{ end_time: null }, { end_time: { $gt: now } }],
      max_members_count: round.max_members_count,
      members_count: { $lte: round.max_members_count - claims.length },
    };
    const members: Record<string, MemberEntry> = {};
    for (const c of claims) {
      filter[`members.${c.userId}`] = { $exists: false };
      members[`members.${c.userId}`] = c.member;
    }
    return this.rounds.findOneAndUpdate(
      filter,
      withOutboxEntries(
        { $set: members, $inc: { members_count: claims.length, rev: 1 } },
        claims.map((c) => c.announcement),
      ),
    );
  }
}
