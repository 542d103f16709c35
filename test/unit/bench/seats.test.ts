import { paymentProblems, SeatLedger, seatedByJoin, seatVerdict } from "../../../bench/seats";

/** A ledger of a round created with `seeded` and joined by `answers` (caller, status), `pending` unanswered. */
function ledgerOf(seeded: string[], answers: [string, number][], pending = 0): SeatLedger {
  const ledger = new SeatLedger(seeded);
  for (let i = 0; i < answers.length + pending; i++) ledger.sent();
  for (const [user, status] of answers) ledger.answered(user, status);
  return ledger;
}

describe("bench case 8 seat check", () => {
  it("when a round holds its seeded members and the callers seated, then it passes and counts the seats taken", () => {
    const ledger = ledgerOf(
      ["a", "b"],
      [
        ["c", 200],
        ["d", 200],
        ["e", 409],
      ],
    );
    expect(seatVerdict([{ round: "r1", ledger, membersCount: 4 }], 50)).toBe(
      "seats exact: in the 1 rounds joined, each holds its seeded members and the callers seated (2 seats taken), none over 50",
    );
  });

  it("when a caller's join is repeated or a seeded member joins, then the seat is counted once", () => {
    const ledger = ledgerOf(
      ["a"],
      [
        ["a", 200],
        ["b", 200],
        ["b", 200],
      ],
    );
    expect(() => seatVerdict([{ round: "r1", ledger, membersCount: 2 }], 50)).not.toThrow();
    expect(() => seatVerdict([{ round: "r1", ledger, membersCount: 4 }], 50)).toThrow(/holds 4 members/);
  });

  it("when a round holds more members than seats, then it fails, whatever the answers were", () => {
    const ledger = ledgerOf(["a"], [], 5);
    expect(() => seatVerdict([{ round: "r1", ledger, membersCount: 3 }], 2)).toThrow(
      "case 8 seats: round r1 holds 3 members of 2 seats",
    );
  });

  it("when a round holds fewer members than the callers seated, then it fails", () => {
    const ledger = ledgerOf(["a"], [["b", 200]]);
    expect(() => seatVerdict([{ round: "r1", ledger, membersCount: 1 }], 50)).toThrow(/holds 1 members/);
  });

  it("when joins were unanswered at the end, then each may have taken a seat, and no more than that", () => {
    const ledger = ledgerOf(["a"], [["b", 200]], 2);
    for (const count of [2, 3, 4]) {
      expect(seatVerdict([{ round: "r1", ledger, membersCount: count }], 50)).toMatch(
        /; 2 joins unanswered when the run stopped$/,
      );
    }
    expect(() => seatVerdict([{ round: "r1", ledger, membersCount: 5 }], 50)).toThrow(
      /2 joins were unanswered/,
    );
  });
});

describe("bench cases 8 and 9 payment check", () => {
  const seated = seatedByJoin([
    [
      "r1",
      ledgerOf(
        ["a"],
        [
          ["b", 200],
          ["a", 200],
          ["c", 409],
        ],
      ),
    ],
    ["r2", ledgerOf([], [["b", 200]])],
  ]);

  it("when callers are seated by joins, then only they are expected to pay, once per round", () => {
    expect(seated).toEqual(new Map([["b", new Set(["r1", "r2"])]]));
  });

  it("when each seated caller has one payment per round, then nothing is wrong", () => {
    const payments = new Map([["b", [{ round_id: "r1" }, { round_id: "r2" }, { round_id: "r9" }]]]);
    expect(paymentProblems(seated, payments)).toBeNull();
  });

  it("when a payment is missing or doubled, then the check says which", () => {
    expect(paymentProblems(seated, new Map([["b", [{ round_id: "r1" }]]]))).toBe(
      "1 wrong: b has 0 payments for r2",
    );
    const doubled = new Map([
      ["b", [{ round_id: "r1" }, { round_id: "r2" }, { round_id: "r9" }, { round_id: "r9" }]],
    ]);
    expect(paymentProblems(seated, doubled)).toBe("1 wrong: b has 2 for r9");
  });
});
