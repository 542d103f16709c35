/**
 * Alternating measurement: baseline, system, baseline, system… for a number of rounds, so that drift of
 * the shared machine (other processes, CPU frequency, caches) hits both sides alike; each side is then
 * summarised by the median of its rounds.
 */
import type { Baseline } from "./baseline";
import { cpuMeter, machineMeter, type CpuPerRequest, type MachineShare, type Watched } from "./cpu";
import type { LoadResult } from "./load";
import type { Scenario } from "./scenarios/scenario";

export interface Summary {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
}

export interface ScenarioOutcome {
  scenario: Scenario;
  system: Summary;
  baseline: Summary;
  runs: {
    baseline: LoadResult;
    system: LoadResult;
    note?: string;
    cpu?: CpuPerRequest;
    /** The load generator's and the idle cores during the system's run, and the waits for a core. */
    machine?: MachineShare;
  }[];
  notes: string[];
  /** Each server process's CPU ms per request served, the median of the rounds. */
  cpu?: CpuPerRequest;
  /** What else the machine did during the system's runs, the median of the rounds. */
  machine?: MachineShare;
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

const summarise = (rs: LoadResult[]): Summary => ({
  rps: median(rs.map((r) => r.rps)),
  p50: median(rs.map((r) => r.p50)),
  p99: median(rs.map((r) => r.p99)),
  // Totals, not medians: every request and every error of every round counts.
  requests: rs.reduce((a, r) => a + r.requests, 0),
  errors: rs.reduce((a, r) => a + r.errors, 0),
});

export async function alternate(
  scenario: Scenario,
  systemUrl: string,
  baseline: Baseline,
  opts: { rounds: number; seconds: number; log: (line: string) => void; watched?: Watched[] },
): Promise<ScenarioOutcome> {
  const recorded = await scenario.record(systemUrl);
  const runs: ScenarioOutcome["runs"] = [];
  for (let round = 0; round < opts.rounds; round++) {
    await baseline.serve(recorded);
    const a = await scenario.measure({ url: baseline.url, side: "baseline", round, seconds: opts.seconds });
    const meter = cpuMeter(opts.watched ?? []);
    const machine = machineMeter(opts.watched ?? []);
    const b = await scenario.measure({ url: systemUrl, side: "system", round, seconds: opts.seconds });
    const cpu = meter.perRequest(b.requests);
    const share = machine.share();
    const note = scenario.verify ? await scenario.verify(systemUrl, round, b) : undefined;
    runs.push({ baseline: a, system: b, note, cpu, ...(share && { machine: share }) });
    opts.log(
      `  ${scenario.key} round ${round + 1}/${opts.rounds}: baseline ${a.rps.toFixed(0)} req/s, ` +
        `system ${b.rps.toFixed(0)} req/s (p99 ${b.p99} ms, errors ${b.errors})${note ? `; ${note}` : ""}`,
    );
  }
  return {
    scenario,
    baseline: summarise(runs.map((r) => r.baseline)),
    system: summarise(runs.map((r) => r.system)),
    runs,
    notes: runs.flatMap((r) => (r.note ? [r.note] : [])),
    cpu: medianCpu(runs.map((r) => r.cpu ?? {})),
    machine: medianShare(runs.flatMap((r) => (r.machine ? [r.machine] : []))),
  };
}

/** Per figure, the median of the rounds' machine readings; undefined when none was read. */
function medianShare(shares: MachineShare[]): MachineShare | undefined {
  if (shares.length === 0) return undefined;
  const waiting = medianCpu(shares.map((s) => s.waiting ?? {}));
  return {
    loadGenerator: median(shares.map((s) => s.loadGenerator)),
    idle: median(shares.map((s) => s.idle)),
    ...(Object.keys(waiting).length > 0 && { waiting }),
  };
}

/** Per process, the median of the rounds' figures (CPU ms per request, or share of a run waited). */
function medianCpu(rounds: Record<string, number>[]): Record<string, number> {
  const names = [...new Set(rounds.flatMap((r) => Object.keys(r)))];
  return Object.fromEntries(
    names.map((n) => [n, median(rounds.flatMap((r) => (r[n] === undefined ? [] : [r[n]])))]),
  );
}
