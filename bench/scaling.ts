/**
 * `npm run -s bench -- --scaling [--sizes 1000,10000,100000] [--seconds 5] [--topology …]`: how cases 1
 * and 2 (reads: one hot round, reads spread over every round) and 3 (joins) grow with the number of
 * rounds in the store. For each topology and size, a fresh system with that many rounds, then one
 * alternating baseline/system round of each case. Prints a table of req/s and p99 per size and
 * topology; written to bench/results/scaling-<time>.md and .json (not for --quick).
 */
import type { Baseline } from "./baseline";
import { planFor, runHttpBench, type TopologyOutcome } from "./http";
import type { Row } from "./lib";
import type { Topology } from "./systems";

export const SCALING_KEYS = ["1", "2", "3"];
export const DEFAULT_SIZES = [1_000, 10_000, 100_000];

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
      row[`${key} vs baseline`] = o ? `${((100 * o.system.rps) / o.baseline.rps).toFixed(1)}%` : "–";
    }
    return row;
  });
}
