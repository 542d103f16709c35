import { bracketed, type ScenarioOutcome } from "../../../bench/ab";
import { CASE_1_DISTRIBUTED_TODAY, combineGoals, goalRows } from "../../../bench/goals";
import type { LoadResult } from "../../../bench/load";
import type { Row } from "../../../bench/lib";

const run = (rps: number, p99 = 10): LoadResult => ({
  requests: rps,
  seconds: 1,
  rps,
  p50: p99 / 2,
  p99,
  statuses: { 200: rps },
  errors: 0,
});

/** An outcome of case `key`: one round per system rate, the baselines around them, and moleculer-web alone. */
function outcome(
  key: string,
  system: number[],
  baselines: number[],
  framework?: { before: LoadResult; after: LoadResult },
  systemP99 = 10,
): ScenarioOutcome {
  const summary = { rps: system[0], p50: 1, p99: systemP99, requests: 1, errors: 0 };
  return {
    scenario: { key, title: key, connections: 1, record: async () => [], measure: async () => run(1) },
    system: summary,
    baseline: summary,
    runs: system.map((s, i) => ({ baseline: run(baselines[i]), system: run(s, systemP99) })),
    closing: run(baselines[system.length]),
    ...(framework && {
      framework: { before: { ...framework.before, when: "" }, after: { ...framework.after, when: "" } },
    }),
    notes: [],
  };
}

describe("a share against the reference runs before and after", () => {
  it("when each round has a reference run before and after it, then the share is against their mean and its spread against each", () => {
    const s = bracketed([50, 60], [100, 120], [120, 100]);
    // Round 1: 50 / 110; round 2: 60 / 110; the median of the two.
    expect(s.value).toBeCloseTo(55 / 110, 10);
    expect(s.low).toBeCloseTo(50 / 120, 10);
    expect(s.high).toBeCloseTo(60 / 100, 10);
  });
});

describe("the goals of one run", () => {
  it("when cases 8 and 2 ran distributed, then their goals are rows with the value, its spread and whether it was met", () => {
    const rows = goalRows([
      {
        topology: "distributed",
        outcomes: [
          outcome("8", [4_000], [20_000, 20_000], { before: run(9_000, 20), after: run(11_000, 20) }, 60),
          outcome("2", [5_000, 6_000, 5_500], [10_000, 10_000, 10_000, 10_000]),
        ],
      },
    ]);
    expect(rows).toEqual([
      expect.objectContaining({
        case: "8",
        goal: "req/s ≥ 40% of moleculer-web alone's",
        value: 40,
        met: "yes",
      }),
      expect.objectContaining({ case: "8", goal: "p99 ≤ 2.5× moleculer-web alone's", value: 3, met: "no" }),
      expect.objectContaining({ case: "2", goal: "req/s ≥ 55% of baseline's", value: 55, met: "yes" }),
    ]);
    expect(rows[0].spread).toBe("36.36–44.44");
  });

  it("when a case did not run, or ran on another Node, then it has no goal row", () => {
    const elsewhere = {
      topology: "distributed" as const,
      node: "v20",
      outcomes: [outcome("1", [1], [1, 1])],
    };
    expect(goalRows([elsewhere, { topology: "embedded", outcomes: [outcome("3", [1], [1, 1])] }])).toEqual(
      [],
    );
  });
});

describe("the goals over several runs", () => {
  const row = (value: number): Row => ({
    case: "1",
    topology: "distributed",
    goal: `req/s ≥ ${CASE_1_DISTRIBUTED_TODAY}% of baseline's`,
    value,
    spread: "",
    met: "",
  });

  it("when three runs met a goal, then it holds, with the lowest, median and highest value", () => {
    const [combined] = combineGoals([[row(45)], [row(38)], [row(41)]]);
    expect(combined).toMatchObject({
      runs: 3,
      values: "45, 38, 41",
      min: 38,
      median: 41,
      max: 45,
      holds: "yes",
    });
  });

  it("when one run of three missed it, then it does not hold", () => {
    expect(combineGoals([[row(45)], [row(30)], [row(41)]])[0].holds).toBe("no");
  });

  it("when fewer than three runs measured it, then it is not judged", () => {
    expect(combineGoals([[row(45)], [row(41)], []])[0].holds).toBe("not judged (2 of 3 runs)");
  });
});
