/**
 * Case 8's seat check: after a run, every round a join reached must hold exactly its seeded members and
 * the callers a join seated, and never more members than seats. Joins still unanswered when a timed run
 * stops may or may not have taken a seat, so they widen the allowed count by their number, never the
 * seat limit. A repeated join answers 200 and changes nothing (docs/decisions/0006-round-fields.md),
 * so seats are counted by caller, not by answer.
 */

/** What the load generator saw of the joins into one round. */
export class SeatLedger {
  /** The seeded members and every caller a join answered 200. */
  readonly members: Set<string>;
  /** How many members the round was created with. */
  readonly seeded: number;
  /** Joins sent that have had no answer yet. */
  unanswered = 0;

  constructor(seeded: readonly string[]) {
    this.members = new Set(seeded);
    this.seeded = this.members.size;
  }

  sent(): void {
    this.unanswered++;
  }

  answered(userId: string, status: number): void {
    this.unanswered--;
    if (status === 200) this.members.add(userId);
  }
}

export interface SeatReading {
  round: string;
  ledger: SeatLedger;
  /** members_count as the system answers it after the run. */
  membersCount: number;
}

/**
 * Throws on the first round that holds more members than seats, fewer than the callers seated, or more
 * than those could explain; otherwise a note for the report.
 */
export function seatVerdict(readings: readonly SeatReading[], seats: number): string {
  let unanswered = 0;
  for (const { round, ledger, membersCount } of readings) {
    const held = ledger.members.size;
    const most = Math.min(seats, held + ledger.unanswered);
    if (membersCount < held || membersCount > most)
      throw new Error(
        `case 8 seats: round ${round} holds ${membersCount} members of ${seats} seats, where its seeded ` +
          `members and the callers seated make ${held} and ${ledger.unanswered} joins were unanswered`,
      );
    unanswered += ledger.unanswered;
  }
  const taken = readings.reduce((a, r) => a + r.membersCount - r.ledger.seeded, 0);
  return (
    `seats exact: in the ${readings.length.toLocaleString("en")} rounds joined, each holds its seeded ` +
    `members and the callers seated (${taken.toLocaleString("en")} seats taken), none over ${seats}` +
    (unanswered > 0 ? `; ${unanswered} joins unanswered when the run stopped` : "")
  );
}
