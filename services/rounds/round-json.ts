/**
 * A round's answer as JSON bytes, built once per snapshot for the callers who all see it alike, and
 * reused until the clock changes more than its seconds_to_end.
 *
 * Who sees a round alike: anyone who is neither its owner (sees every phone), nor a member (sees their
 * own phone), nor has it among their favourites (in_favorites), nor, when its item carries a meeting
 * link or password, manages the item's store (sees them, as owner and members do: decision 0019).
 * Those are rendered per request; the shared answer is rendered for an outsider, so it carries null
 * for the meeting link and password.
 * What moves with the clock: seconds_to_end every second, which is spliced in per request (and by the
 * gateway, which may keep the head: `countdown`); status, is_ended and format_status once, at end_time,
 * which ends the reuse. A snapshot is fixed for its
 * round's revision, so a join (a new revision, a new snapshot) can never meet an older answer; the
 * answers hang off the snapshot object itself and go when it goes.
 */
import { hasMeeting, isEndedAt, managersOf, renderedUntil, renderRound, secondsToEnd } from "./round-view";
import type { RoundSnapshot } from "./round-snapshot";
import type { Countdown } from "../../shared/contracts/common";

interface SharedAnswer {
  /** The answer up to and including `"seconds_to_end":`. */
  head: Buffer;
  /** The instants (epoch ms) between which the head holds: [from, until), either side of the end time. */
  from: number;
  until: number;
  /** Who sees the round otherwise (seenOtherwiseBy), fixed for the snapshot. */
  others: string[];
  /** How the head counts down, for a round with an end time (sent with `others`). */
  countdown?: Countdown;
}

const SECONDS_KEY = "seconds_to_end";

/**
 * Past this many callers who see a round otherwise, its shared answer is not offered to the gateway for
 * other callers: the list goes back with every answer, and must stay small beside it.
 */
export const SAME_FOR_ALL_MAX_EXCEPTIONS = 1000;

export interface RenderedRound {
  parts: Buffer[];
  /** Until when (epoch ms) the answer stays exactly right; null: no end. */
  freshUntil: number | null;
  /** Present when this answer is every caller's but these (see FreshnessMeta.$sameForAllBut). */
  sameForAllBut?: string[];
  /** With sameForAllBut, for a round with an end time: how the last part counts down (FreshnessMeta). */
  countdown?: Countdown;
}

export class RoundJson {
  private readonly shared = new WeakMap<RoundSnapshot, SharedAnswer>();

  /** The answer for this caller now, and until when (epoch ms) it stays exactly right (null: no end). */
  render(snap: RoundSnapshot, callerId: string, now: Date): RenderedRound {
    const seconds = secondsToEnd(snap.end_time, now);
    const freshUntil = renderedUntil({
      is_ended: isEndedAt(snap, now),
      end_time: snap.end_time,
      seconds_to_end: seconds,
    });
    if (!seesAlike(snap, callerId)) {
      return { parts: [Buffer.from(JSON.stringify(renderRound(snap, callerId, now)))], freshUntil };
    }
    const t = now.getTime();
    let answer = this.shared.get(snap);
    if (!answer || t < answer.from || t >= answer.until) {
      answer = sharedAnswer(snap, callerId, now);
      this.shared.set(snap, answer);
    }
    // Head and tail stay two buffers: joining them would copy the whole answer into a new buffer per read.
    const parts = [answer.head, Buffer.from(`${seconds}}`)];
    const { others, countdown } = answer;
    if (others.length > SAME_FOR_ALL_MAX_EXCEPTIONS) return { parts, freshUntil };
    return countdown
      ? { parts, freshUntil, sameForAllBut: others, countdown }
      : { parts, freshUntil, sameForAllBut: others };
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
  const { [SECONDS_KEY]: _seconds, ...rest } = renderRound(snap, callerId, now);
  const json = JSON.stringify(rest);
  const end = snap.end_time === null ? Number.POSITIVE_INFINITY : Date.parse(snap.end_time);
  const ended = isEndedAt(snap, now);
  const head = Buffer.from(`${json.slice(0, -1)},"${SECONDS_KEY}":`);
  // Ended by the flag: for good; by the clock: from the end time on; not yet: until the end time.
  const from = ended && !snap.is_ended ? end : Number.NEGATIVE_INFINITY;
  const until = ended ? Number.POSITIVE_INFINITY : end;
  const others = seenOtherwiseBy(snap);
  if (snap.end_time === null) return { head, from, until, others };
  const countdown = {
    to: end,
    until: until === Number.POSITIVE_INFINITY ? null : until,
    headBytes: head.length,
  };
  return { head, from, until, others, countdown };
}
