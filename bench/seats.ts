/**
 * Cases 8 and 9's seat and payment checks. Seats: after a run, every round a join reached must hold exactly its seeded members and
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

/** The rounds each caller was seated in by a join (a 200 to a caller not among the round's seeded members). */
export function seatedByJoin(ledgers: Iterable<[string, SeatLedger]>): Map<string, Set<string>> {
  const seated = new Map<string, Set<string>>();
  for (const [round, ledger] of ledgers) {
    for (const user of [...ledger.members].slice(ledger.seeded)) {
      let rounds = seated.get(user);
      if (!rounds) seated.set(user, (rounds = new Set()));
      rounds.add(round);
    }
  }
  return seated;
}

/**
 * The payments check: each caller a join seated has exactly one payment for that round, and nobody has
 * two for one round (a join unanswered when the run stopped may have made one). `payments` are each
 * seated caller's, by user id. Null when it holds; otherwise what is wrong, for the first few callers.
 */
export function paymentProblems(
  seated: Map<string, Set<string>>,
  payments: Map<string, readonly { round_id: string }[]>,
): string | null {
  const problems: string[] = [];
  for (const [user, rounds] of seated) {
    const count = new Map<string, number>();
    for (const p of payments.get(user) ?? []) count.set(p.round_id, (count.get(p.round_id) ?? 0) + 1);
    for (const round of rounds) {
      if (count.get(round) !== 1) problems.push(`${user} has ${count.get(round) ?? 0} payments for ${round}`);
    }
    for (const [round, n] of count)
      if (n > 1 && !rounds.has(round)) problems.push(`${user} has ${n} for ${round}`);
  }
  return problems.length === 0 ? null : `${problems.length} wrong: ${problems.slice(0, 3).join("; ")}`;
}
