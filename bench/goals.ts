/**
 * The goals of cases 1, 2, 8 and 9, each a share of a reference measured in the same run (moleculer-web
 * alone for cases 8 and 9, the bare baseline for cases 1 and 2) or, for a p99, a multiple of the
 * reference's p99. Each run's report has a goals table (goalRows); whether a goal holds is judged over
 * at least three runs (combineGoals, `npm run bench:goals -- <result json files…>`). Reported, never
 * asserted by a test: the machine's speed drifts too much for that.
 */
import { baselineShare, frameworkShares, median, type ScenarioOutcome, type Share } from "./ab";
import type { TopologyOutcome } from "./http";
import type { Row } from "./lib";
import type { Topology } from "./systems";

/**
 * Case 1 distributed's share of the bare baseline today: the lower of the two runs of the current code
 * in docs/performance.md ("Against 1f0ad61, quiet machine": 45.0% and 37.7%).
 */
export const CASE_1_DISTRIBUTED_TODAY = 37.7;

export interface Goal {
  key: string;
  topology: Topology;
  /** What is compared: req/s as a share (%), or p99 as a multiple, of the reference. */
  measure: "rps" | "p99";
  reference: "baseline" | "moleculer-web alone";
  /** At least this share (%), or at most this multiple. */
  bound: number;
}

const share = (key: string, topology: Topology, reference: Goal["reference"], bound: number): Goal => ({
  key,
  topology,
  measure: "rps",
  reference,
  bound,
});
const p99 = (key: string, topology: Topology, bound: number): Goal => ({
  key,
  topology,
  measure: "p99",
  reference: "moleculer-web alone",
  bound,
});

export const GOALS: Goal[] = [
  share("8", "distributed", "moleculer-web alone", 40),
  p99("8", "distributed", 2.5),
  share("8", "embedded", "moleculer-web alone", 50),
  p99("8", "embedded", 1.5),
  share("9", "distributed", "moleculer-web alone", 25),
  share("9", "embedded", "moleculer-web alone", 35),
  share("2", "distributed", "baseline", 55),
  share("1", "distributed", "baseline", CASE_1_DISTRIBUTED_TODAY),
];

export const goalText = (g: Goal): string =>
  g.measure === "rps" ? `req/s ≥ ${g.bound}% of ${g.reference}'s` : `p99 ≤ ${g.bound}× ${g.reference}'s`;

const met = (g: Goal, value: number): boolean => (g.measure === "rps" ? value >= g.bound : value <= g.bound);

/** The goal's figure in its unit (a share in %, a multiple), with its spread; undefined if not measured. */
function measured(g: Goal, o: ScenarioOutcome): Share | undefined {
  const s =
    g.reference === "baseline"
      ? baselineShare(o)
      : g.measure === "rps"
        ? frameworkShares(o)?.rps
        : frameworkShares(o)?.p99;
  if (!s) return undefined;
  const scale = g.measure === "rps" ? 100 : 1;
  return { value: s.value * scale, low: s.low * scale, high: s.high * scale };
}

const round = (x: number) => Math.round(x * 100) / 100;

/** One row per goal whose case ran in this run: the figure, its spread against each reference run, met. */
export function goalRows(results: TopologyOutcome[]): Row[] {
  return GOALS.flatMap((g) => {
    // Another Node's rows (bench/machine-node.ts) are not the ones the goals are set for.
    const o = results
      .filter((r) => r.topology === g.topology && !r.node)
      .flatMap((r) => r.outcomes)
      .find((x) => x.scenario.key === g.key);
    const s = o && measured(g, o);
    if (!s) return [];
    return [
      {
        case: g.key,
        topology: g.topology,
        goal: goalText(g),
        value: round(s.value),
        spread: `${round(s.low)}–${round(s.high)}`,
        met: met(g, s.value) ? "yes" : "no",
      },
    ];
  });
}

/** The title of the goals' section in a run's report, where combineGoals finds them. */
export const GOALS_TITLE = "Goals";

/** The least number of runs over which a goal is judged. */
export const MIN_RUNS = 3;

/**
 * Each goal over several runs' goal rows (one list per run): its values in the order of the runs, their
 * lowest, median and highest, and whether it held in every run, judged over at least MIN_RUNS runs.
 */
export function combineGoals(runs: Row[][]): Row[] {
  return GOALS.flatMap((g) => {
    const rows = runs.flatMap((r) =>
      r.filter((x) => x.case === g.key && x.topology === g.topology && x.goal === goalText(g)),
    );
    if (rows.length === 0) return [];
    const values = rows.map((r) => Number(r.value));
    const held = values.every((v) => met(g, v));
    return [
      {
        case: g.key,
        topology: g.topology,
        goal: goalText(g),
        runs: rows.length,
        values: values.join(", "),
        min: round(Math.min(...values)),
        median: round(median(values)),
        max: round(Math.max(...values)),
        holds:
          rows.length < MIN_RUNS ? `not judged (${rows.length} of ${MIN_RUNS} runs)` : held ? "yes" : "no",
      },
    ];
  });
}
