/**
 * Alternating measurement: baseline, system, baseline, system… for a number of rounds and one baseline
 * run more at the end, so that every system round has a reference run just before and just after it,
 * and drift of the shared machine (other processes, CPU frequency, caches) hits both sides alike. The
 * system's share is its rate against the mean of the two runs around it (the median of the rounds),
 * with the range of its shares against each one: how far the yardstick itself moved.
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
  /** The baseline's run after the last system round (the one before each round is in `runs`). */
  closing?: LoadResult;
  /**
   * Cases 8 and 9: moleculer-web alone on the same requests (bench/floor-server.ts), as long as the
   * system's run, just before it and after it.
   */
  framework?: { before: ReferenceRun; after: ReferenceRun };
  /** Each server process's CPU ms per request served, the median of the rounds. */
  cpu?: CpuPerRequest;
  /** What else the machine did during the system's runs, the median of the rounds. */
  machine?: MachineShare;
}

/** A reference server's run, with its CPU ms a request and when it ran, for the notes. */
export type ReferenceRun = LoadResult & { cpuMs?: number; when: string };

/** A ratio of the system's figure to the reference's: against their mean, and against each run alone. */
export interface Share {
  value: number;
  low: number;
  high: number;
}

/**
 * Round i of the system (`system[i]`) against the reference runs just before (`before[i]`) and after
 * (`after[i]`) it: the median over rounds of system / mean(before, after), and the lowest and highest
 * of system / before and system / after over every round.
 */
export function bracketed(system: number[], before: number[], after: number[]): Share {
  const ratios = system.flatMap((x, i) => [x / before[i], x / after[i]]);
  return {
    value: median(system.map((x, i) => x / ((before[i] + after[i]) / 2))),
    low: Math.min(...ratios),
    high: Math.max(...ratios),
  };
}

/** The baseline runs before and after each system round (a run without a closing one: itself twice). */
function around(o: ScenarioOutcome, figure: (r: LoadResult) => number): [number[], number[]] {
  const before = o.runs.map((r) => figure(r.baseline));
  const after = o.runs.map((r, i) => {
    const next = o.runs[i + 1]?.baseline ?? o.closing ?? r.baseline;
    return figure(next);
  });
  return [before, after];
}

/** The system's req/s as a share of the bare baseline's around it. */
export const baselineShare = (o: ScenarioOutcome): Share =>
  bracketed(
    o.runs.map((r) => r.system.rps),
    ...around(o, (r) => r.rps),
  );

/** Cases 8 and 9: the system's req/s as a share of moleculer-web alone's, and its p99 as a multiple. */
export function frameworkShares(o: ScenarioOutcome): { rps: Share; p99: Share } | undefined {
  const f = o.framework;
  if (!f) return undefined;
  return {
    rps: bracketed([o.system.rps], [f.before.rps], [f.after.rps]),
    p99: bracketed([o.system.p99], [f.before.p99], [f.after.p99]),
  };
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
  await baseline.serve(recorded);
  const last = opts.rounds - 1;
  const closing = await scenario.measure({
    url: baseline.url,
    side: "baseline",
    round: last,
    seconds: opts.seconds,
  });
  opts.log(`  ${scenario.key} baseline after the last round: ${closing.rps.toFixed(0)} req/s`);
  return {
    scenario,
    baseline: summarise([...runs.map((r) => r.baseline), closing]),
    closing,
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
