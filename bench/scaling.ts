/**
 * `npm run -s bench -- --scaling [--sizes 1000,10000,100000] [--users 10000,100000,1000000]
 * [--seconds 5] [--topology …]`: how cases 1 and 2 (reads: one hot round, reads spread over every
 * round) and 3 (joins) grow with the number of rounds in the store, and case 9 (the mixed workload,
 * every request a new caller: the population weighs most there) with the number of users (and a tenth
 * as many rounds). For each topology and size, a fresh system
 * of that size, then one alternating baseline/system round of each case. Prints a table of req/s and
 * p99 per size and topology; written to bench/results/scaling-<time>.md and .json (not for --quick).
 */
import { baselineShare, type ScenarioOutcome } from "./ab";
import type { Baseline } from "./baseline";
import { formatCpu } from "./cpu";
import { planFor, runHttpBench, type TopologyOutcome } from "./http";
import type { Row } from "./lib";
import { formatShare } from "./report";
import { mixedPlanFor, runMixedBench, runMixedEmbedded } from "./mixed";
import type { Topology } from "./systems";

export const SCALING_KEYS = ["1", "2", "3"];
export const DEFAULT_SIZES = [1_000, 10_000, 100_000];
/** Case 9's populations: users, with a tenth as many rounds (its full run's 100,000 and 10,000). */
export const DEFAULT_USER_SIZES = [10_000, 100_000, 1_000_000];

export interface ScalingOutcome {
  rounds: number;
  result: TopologyOutcome;
}

export async function runScaling(
  topologies: Topology[],
  sizes: number[],
  seconds: number,
  baseline: Baseline,
  log: (line: string) => void,
): Promise<ScalingOutcome[]> {
  const out: ScalingOutcome[] = [];
  for (const topology of topologies) {
    for (const rounds of sizes) {
      const full = planFor(false, SCALING_KEYS);
      const plan = {
        ...full,
        rounds: 1,
        seconds,
        sizes: { ...full.sizes, spreadRounds: rounds, joinRounds: 1 },
      };
      log(`== scaling: ${topology}, ${rounds.toLocaleString("en")} rounds`);
      out.push({ rounds, result: await runHttpBench(topology, plan, baseline, log) });
    }
  }
  return out;
}

const fixed = (n: number) => n.toLocaleString("en", { maximumFractionDigits: 0 });

/** One row per size and topology: req/s and p99 of each case side by side. */
export function scalingRows(outcomes: ScalingOutcome[]): Row[] {
  return outcomes.map(({ rounds, result }) => {
    const row: Row = { rounds: fixed(rounds), topology: result.topology };
    for (const key of SCALING_KEYS) {
      const o = result.outcomes.find((x) => x.scenario.key === key);
      row[`${key} req/s`] = o ? fixed(o.system.rps) : "–";
      row[`${key} p99 ms`] = o ? o.system.p99 : "–";
      row[`${key} vs baseline`] = o ? formatShare(baselineShare(o)) : "–";
    }
    return row;
  });
}

export interface MixedScalingOutcome {
  users: number;
  topology: Topology;
  /** What was measured; absent when the size could not be run (`failure` says why). */
  outcome?: ScenarioOutcome;
  failure?: string;
}

/** Case 9 on a fresh system per topology and number of users (a tenth as many rounds). */
export async function runMixedScaling(
  topologies: Topology[],
  users: number[],
  seconds: number,
  baseline: Baseline,
  log: (line: string) => void,
): Promise<MixedScalingOutcome[]> {
  const out: MixedScalingOutcome[] = [];
  for (const topology of topologies) {
    for (const n of users) {
      const sizes = { users: n, rounds: Math.max(1, Math.round(n / 10)) };
      const plan = { ...mixedPlanFor(false, sizes, undefined, undefined, ["9"]), seconds };
      log(`== scaling: ${topology}, case 9, ${n.toLocaleString("en")} users`);
      const run = topology === "embedded" ? runMixedEmbedded : runMixedBench;
      // A size that cannot be seeded or started is a row of the report, not the end of it: the
      // sizes measured before and after it are kept.
      try {
        out.push({ users: n, topology, outcome: (await run(plan, baseline, log))[0].outcome });
      } catch (err) {
        const failure = (err as Error)?.message ?? String(err);
        log(`scaling: ${topology} case 9 at ${n.toLocaleString("en")} users failed: ${failure}`);
        out.push({ users: n, topology, failure });
      }
    }
  }
  return out;
}

/** One row per population and topology: how case 9's rate, latency and cost per request move. */
export function mixedScalingRows(outcomes: MixedScalingOutcome[]): Row[] {
  return outcomes.map(({ users, topology, outcome: o, failure }) => ({
    users: fixed(users),
    rounds: fixed(Math.max(1, Math.round(users / 10))),
    topology,
    "req/s": o ? fixed(o.system.rps) : "–",
    "p50 ms": o ? o.system.p50 : "–",
    "p99 ms": o ? o.system.p99 : "–",
    errors: o ? o.system.errors : "–",
    "vs baseline": o ? formatShare(baselineShare(o)) : "–",
    "CPU ms per request": o ? formatCpu(o.cpu) : "–",
    notes: o ? o.notes.join("; ") : `not measured: ${failure}`,
  }));
}
