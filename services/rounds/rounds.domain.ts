/**
 * Reading and joining rounds, as plain functions over their collaborators so they can be tested without a
 * broker. The service wires the collaborators to the cache, the repository and other services.
 *
 * The round document itself is read from the store on every request (it is the truth about seats); what
 * is expensive to assemble around it (profiles, item, store) is cached per round revision.
 */
import type { Round } from "../../shared/contracts/round";
import { ConflictError, NotFoundError, RequestValidationError } from "../../shared/errors";
import { checkAttributes } from "./join-rules";
import { isMember, type RoundSnapshot } from "./round-snapshot";
import { isEndedAt, renderRound } from "./round-view";
import type { RoundDoc, RoundRead } from "./round-doc";
import type { RoundsRepository } from "./rounds.repository";
import type { FullRound, FullRounds } from "./full-rounds";
import type { RenderedRound, RoundAnswers } from "./round-answers";
import type { TraceContext } from "../../shared/tracing/propagation";

export interface RoundsDeps {
  repo: Pick<RoundsRepository, "findById" | "addMember">;
  /** Rounds seen full: they refuse newcomers without being read again. */
  fullRounds: Pick<FullRounds, "get" | "remember">;
  /**
   * The snapshot of the round at the document's revision (from the cache when present). `base`, a
   * snapshot of an earlier revision, lets a missing one be derived from it (round-snapshot's
   * deriveSnapshot) instead of read whole again.
   */
  snapshotOf(doc: RoundRead, base?: RoundSnapshot): Promise<RoundSnapshot>;
  /** Drops the round's cached snapshot of the revision a change has just replaced. */
  invalidate(roundId: string, replacedRev: number): Promise<void>;
  areFriends(a: string, b: string): Promise<boolean>;
  /**
   * A new membership is stored (with its announcement in the round's outbox): tell the caches and hand
   * the announcement on to its channel, not waiting for it. Never fails the join: what is not published
   * now is by the relay's sweep.
   */
  joined(doc: RoundDoc, userId: string): Promise<void>;
  /** The request's trace, recorded with the join's announcement (tracing on only). */
  trace?: TraceContext;
  /** Reports a failure that must not fail the request (the change is already stored). */
  warn(message: string, err: unknown): void;
  now(): Date;
}

const roundNotFound = () => new NotFoundError("Round not found");

/**
 * Private rounds are visible to their owner, their members and the owner's friends; to anyone else they
 * do not exist (404, never 403, so a private round's existence does not leak).
 */
async function canSee(
  deps: RoundsDeps,
  doc: Pick<RoundRead, "is_private" | "owner_id" | "members">,
  userId: string,
): Promise<boolean> {
  if (!doc.is_private || doc.owner_id === userId || doc.members?.[userId]) return true;
  return deps.areFriends(doc.owner_id, userId);
}

async function visibleRound(deps: RoundsDeps, roundId: string, userId: string): Promise<RoundRead> {
  const doc = await deps.repo.findById(roundId);
  if (!doc || !(await canSee(deps, doc, userId))) throw roundNotFound();
  deps.fullRounds.remember(doc);
  return doc;
}

export async function getRound(deps: RoundsDeps, roundId: string, userId: string): Promise<Round> {
  const doc = await visibleRound(deps, roundId, userId);
  return renderRound(await deps.snapshotOf(doc), userId, deps.now());
}

/**
 * `getRound`, with until when it holds and, when it is every caller's but some,
 * who those are (see RoundAnswers), for the gateway's kept answers.
 */
export async function getRoundAnswer(
  deps: RoundsDeps,
  answers: RoundAnswers,
  roundId: string,
  userId: string,
): Promise<RenderedRound> {
  const doc = await visibleRound(deps, roundId, userId);
  const rendered = answers.render(await deps.snapshotOf(doc), userId, deps.now());
  // A private round is seen by the owner's friends only: its answer is never anyone else's.
  if (doc.is_private) {
    delete rendered.sameForAllBut;
    delete rendered.countdown;
  }
  return rendered;
}

/** Why a conditional join would not apply, read from the round as it is now. */
function refusal(doc: FullRound | RoundRead, now: Date): ConflictError | null {
  if (
    isEndedAt(
      { is_ended: doc.is_ended, end_time: doc.end_time ? new Date(doc.end_time).toISOString() : null },
      now,
    )
  ) {
    return new ConflictError("Round has ended");
  }
  if (!doc.is_active) return new ConflictError("Round is not active");
  if (doc.members_count >= doc.max_members_count) return new ConflictError("Round is full");
  return null;
}

/** Why a round seen full refuses a newcomer (ended or inactive first, as a read of it would say). */
const refusalOfFull = (full: FullRound, now: Date): ConflictError =>
  refusal(full, now) ?? new ConflictError("Round is full");

/**
 * Joins atomically and idempotently: a member joining again gets the round back unchanged and no event;
 * the seat count can never pass max_members_count because the membership and the count change in one
 * conditional update, which also records the join's announcement (`round.member.joined`) in the round's
 * outbox, so a crash at any point after it loses no payment.
 */
export async function joinRound(
  deps: RoundsDeps,
  roundId: string,
  userId: string,
  attributes: unknown[],
): Promise<Round> {
  const full = deps.fullRounds.get(roundId);
  if (full && !full.members[userId]) {
    // Known full, and a full round stays full: refused without reading it (visibility first, as below).
    if (!(await canSee(deps, full, userId))) throw roundNotFound();
    throw refusalOfFull(full, deps.now());
  }
  let doc = await visibleRound(deps, roundId, userId);
  let before: RoundSnapshot | undefined;
  if (!doc.members?.[userId]) {
    // A round that cannot be joined is refused before the attributes are looked at: they cannot matter.
    const refused = refusal(doc, deps.now());
    if (refused) throw refused;
    before = await deps.snapshotOf(doc);
    const checked = checkAttributes(before.item.attribute_values, attributes);
    if (!checked.ok) throw new RequestValidationError(checked.issues);
    const outcome = await addMember(deps, doc, userId, checked.ids);
    if (outcome.added) await deps.joined(outcome.doc, userId);
    doc = outcome.doc;
  }
  // The new revision differs from `before` by its members: derived from it, only the newcomer is read.
  const snap = await deps.snapshotOf(doc, before);
  if (!isMember(snap, userId)) throw new ConflictError("Round is busy, try again");
  return renderRound(snap, userId, deps.now());
}

/**
 * The conditional update, retried when the round changed between the read and the write. `added` is
 * false when a concurrent request of the same user won (it announces the join, not this one).
 */
async function addMember(
  deps: RoundsDeps,
  doc: RoundRead,
  userId: string,
  attributes: number[],
): Promise<{ doc: RoundDoc; added: true } | { doc: RoundRead; added: false }> {
  let current = doc;
  for (let attempt = 0; attempt < 5; attempt++) {
    const now = deps.now();
    const refused = refusal(current, now);
    if (refused) throw refused;
    const updated = await deps.repo.addMember(current, userId, attributes, now, deps.trace);
    if (updated) deps.fullRounds.remember(updated);
    if (updated) {
      // Snapshots are keyed by revision, so a failed clean-up only leaves garbage until its TTL.
      await deps
        .invalidate(current._id, current.rev)
        .catch((err) => deps.warn("Could not clean the round's cache", err));
      return { doc: updated, added: true };
    }
    // Filled meanwhile by joins this process answered (a stampede's first wave): refused without a read.
    const full = deps.fullRounds.get(current._id);
    if (full && !full.members[userId]) throw refusalOfFull(full, deps.now());
    const reread = await deps.repo.findById(current._id);
    if (!reread) throw roundNotFound();
    deps.fullRounds.remember(reread);
    if (reread.members?.[userId]) return { doc: reread, added: false }; // the same user's request won
    current = reread;
  }
  throw new ConflictError("Round is busy, try again");
}
