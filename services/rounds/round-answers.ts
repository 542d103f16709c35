/**
 * A round's answer, rendered once per snapshot for the callers who all see it alike, and reused until
 * the clock changes more than its seconds_to_end.
 *
 * Who sees a round alike: anyone who is neither its owner (sees every phone), nor a member (sees their
 * own phone), nor has it among their favourites (in_favorites), nor, when its item carries a meeting
 * link or password, manages the item's store (sees them, as owner and members do: decision 0019).
 * Those are rendered per request; the shared answer is rendered for an outsider, so it carries null
 * for the meeting link and password.
 * What moves with the clock: seconds_to_end every second, set per request (and counted down by the
 * gateway, which may keep the rest: `countdown`); status, is_ended and format_status once, at end_time,
 * which ends the reuse. A snapshot is fixed for its round's revision, so a join (a new revision, a new
 * snapshot) can never meet an older answer; the answers hang off the snapshot object itself and go when
 * it goes.
 */
import type { Round } from "../../shared/contracts/round";
import { hasMeeting, isEndedAt, managersOf, renderedUntil, renderRound, secondsToEnd } from "./round-view";
import type { RoundSnapshot } from "./round-snapshot";
import type { Countdown } from "../../shared/contracts/common";

type WithoutSeconds = Omit<Round, "seconds_to_end">;

interface SharedAnswer {
  /** The answer without its seconds_to_end. */
  rest: WithoutSeconds;
  /** The instants (epoch ms) between which it holds: [from, until), either side of the end time. */
  from: number;
  until: number;
  /** Who sees the round otherwise (seenOtherwiseBy), fixed for the snapshot. */
  others: string[];
  /** How seconds_to_end counts down, for a round with an end time (sent with `others`). */
  countdown?: Countdown;
}

/**
 * Past this many callers who see a round otherwise, its shared answer is not offered to the gateway for
 * other callers: the list goes back with every answer, and must stay small beside it.
 */
export const SAME_FOR_ALL_MAX_EXCEPTIONS = 1000;

export interface RenderedRound {
  round: Round;
  /** Until when (epoch ms) the answer stays exactly right; null: no end. */
  freshUntil: number | null;
  /** Present when this answer is every caller's but these (see FreshnessMeta.$sameForAllBut). */
  sameForAllBut?: string[];
  /** With sameForAllBut, for a round with an end time: how seconds_to_end counts down (FreshnessMeta). */
  countdown?: Countdown;
}

export class RoundAnswers {
  private readonly shared = new WeakMap<RoundSnapshot, SharedAnswer>();

  /** The answer for this caller now, and until when (epoch ms) it stays exactly right (null: no end). */
  render(snap: RoundSnapshot, callerId: string, now: Date): RenderedRound {
    const seconds = secondsToEnd(snap.end_time, now);
    const freshUntil = renderedUntil({
      is_ended: isEndedAt(snap, now),
      end_time: snap.end_time,
      seconds_to_end: seconds,
    });
    if (!seesAlike(snap, callerId)) return { round: renderRound(snap, callerId, now), freshUntil };
    const t = now.getTime();
    let answer = this.shared.get(snap);
    if (!answer || t < answer.from || t >= answer.until) {
      answer = sharedAnswer(snap, callerId, now);
      this.shared.set(snap, answer);
    }
    const round: Round = { ...answer.rest, seconds_to_end: seconds };
    const { others, countdown } = answer;
    if (others.length > SAME_FOR_ALL_MAX_EXCEPTIONS) return { round, freshUntil };
    return countdown
      ? { round, freshUntil, sameForAllBut: others, countdown }
      : { round, freshUntil, sameForAllBut: others };
  }
}

/** The store managers who see a round otherwise: all of them when its item has a meeting, else none. */
const meetingManagers = (snap: RoundSnapshot): readonly string[] =>
  hasMeeting(snap.item) ? managersOf(snap.item) : [];

/**
 * The callers who see a round otherwise than everyone else: its owner, members and favouriters, and the
 * store's managers when the item has a meeting link or password.
 */
function seenOtherwiseBy(snap: RoundSnapshot): string[] {
  return [snap.owner_id, ...snap.favorites, ...snap.members.map((m) => m.user_id), ...meetingManagers(snap)];
}

/**
 * Neither owner, member, one who favourited it nor (item with a meeting) a manager of its store: the
 * caller's render is everyone else's too.
 */
export function seesAlike(snap: RoundSnapshot, callerId: string): boolean {
  return (
    callerId !== snap.owner_id &&
    !snap.favorites.includes(callerId) &&
    !snap.members.some((m) => m.user_id === callerId) &&
    !meetingManagers(snap).includes(callerId)
  );
}

function sharedAnswer(snap: RoundSnapshot, callerId: string, now: Date): SharedAnswer {
  const { seconds_to_end: _seconds, ...rest } = renderRound(snap, callerId, now);
  const end = snap.end_time === null ? Number.POSITIVE_INFINITY : Date.parse(snap.end_time);
  const ended = isEndedAt(snap, now);
  // Ended by the flag: for good; by the clock: from the end time on; not yet: until the end time.
  const from = ended && !snap.is_ended ? end : Number.NEGATIVE_INFINITY;
  const until = ended ? Number.POSITIVE_INFINITY : end;
  const others = seenOtherwiseBy(snap);
  if (snap.end_time === null) return { rest, from, until, others };
  const countdown = { to: end, until: until === Number.POSITIVE_INFINITY ? null : until };
  return { rest, from, until, others, countdown };
}
