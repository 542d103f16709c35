/**
 * CPU time each server process spends per request served (Linux, from /proc/<pid>/stat), the cost of
 * a request per service. It shows which process saturates first, and it holds better than req/s when
 * other work shares the machine: a busy neighbour slows a round but adds little to its CPU per request.
 */
import fs from "node:fs";

/** A server process of a system under load; the pid may change when a process is restarted. */
export interface Watched {
  name: string;
  pid: () => number | undefined;
}

/** Clock ticks per second of utime/stime in /proc/<pid>/stat (USER_HZ, 100 on every Linux we run). */
const TICKS_PER_SECOND = 100;

/** User plus system CPU time of a process in ms, or undefined when it cannot be read. */
export function cpuMillisOf(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return ((utime + stime) * 1000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

export type CpuPerRequest = Record<string, number>;

/**
 * Starts reading `read` (ms) of each watched process; `since()` gives how much each one's grew. A
 * process that could not be read, or was restarted since (another pid), is left out rather than guessed.
 */
function perProcess(
  watched: Watched[],
  read: (pid: number) => number | undefined,
): () => Record<string, number> {
  const start = watched.map((w) => {
    const pid = w.pid();
    return { w, pid, ms: pid === undefined ? undefined : read(pid) };
  });
  return () => {
    const grown: Record<string, number> = {};
    for (const { w, pid, ms } of start) {
      const now = pid === undefined || w.pid() !== pid ? undefined : read(pid);
      if (ms !== undefined && now !== undefined) grown[w.name] = now - ms;
    }
    return grown;
  };
}

/** Starts a reading; `perRequest(n)` gives each process's CPU ms per request over the n served since. */
export function cpuMeter(watched: Watched[]): { perRequest(requests: number): CpuPerRequest } {
  const spent = perProcess(watched, cpuMillisOf);
  return {
    perRequest(requests) {
      if (requests <= 0) return {};
      return Object.fromEntries(Object.entries(spent()).map(([name, ms]) => [name, ms / requests]));
    },
  };
}

/** How long untilQuiet waited, and how busy the watched processes still were when it stopped. */
export interface Quiet {
  waitedMs: number;
  /** Cores the watched processes used together over the last window. */
  cores: number;
  quiet: boolean;
}

/**
 * Waits until the watched processes together use under `belowCores` over a window of `windowMs` (a
 * system still writing, compacting or publishing after a run), or `timeoutMs` has passed. A measurement
 * taken after it has the machine to itself, as the system's own run had.
 */
export async function untilQuiet(
  watched: Watched[],
  opts: { belowCores?: number; windowMs?: number; timeoutMs?: number } = {},
): Promise<Quiet> {
  const { belowCores = 0.05, windowMs = 1_000, timeoutMs = 60_000 } = opts;
  const started = performance.now();
  for (;;) {
    const spent = perProcess(watched, cpuMillisOf);
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    const cores = Object.values(spent()).reduce((sum, ms) => sum + ms, 0) / windowMs;
    const waitedMs = performance.now() - started;
    if (cores < belowCores || waitedMs >= timeoutMs) return { waitedMs, cores, quiet: cores < belowCores };
  }
}

/**
 * What else the machine did during a run, in cores: the load generator (autocannon runs in this
 * process) and the time no core had work. It tells a server bound by its own thread (cores left idle)
 * from a machine with no core to spare. `waiting` tells how much that costs each process: the share of
 * the run its main thread (the event loop) was ready to run and waited for a core, during which every
 * request it holds waits too.
 */
export interface MachineShare {
  loadGenerator: number;
  idle: number;
  waiting?: Record<string, number>;
}

/** The load generator's name in `waiting`. */
export const LOAD_GENERATOR = "load generator";

/** Starts a reading; `share()` gives the load generator's cores, the idle cores and the waits since. */
export function machineMeter(watched: Watched[] = []): { share(): MachineShare | undefined } {
  const started = performance.now();
  const cpu = process.cpuUsage();
  const idle = idleMillis();
  const waited = perProcess([...watched, { name: LOAD_GENERATOR, pid: () => process.pid }], runQueueMillisOf);
  return {
    share() {
      const seconds = (performance.now() - started) / 1000;
      const idleNow = idleMillis();
      if (idle === undefined || idleNow === undefined || seconds <= 0) return undefined;
      const used = process.cpuUsage(cpu);
      const waiting = Object.fromEntries(
        Object.entries(waited()).map(([name, ms]) => [name, ms / 1000 / seconds]),
      );
      return {
        loadGenerator: (used.user + used.system) / 1e6 / seconds,
        idle: (idleNow - idle) / 1000 / seconds,
        ...(Object.keys(waiting).length > 0 && { waiting }),
      };
    },
  };
}

/**
 * Time in ms the process's main thread has spent ready to run but waiting for a core (the second field
 * of /proc/<pid>/schedstat, in ns), or undefined when the kernel does not keep it.
 */
export function runQueueMillisOf(pid: number): number | undefined {
  try {
    const waited = Number(fs.readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[1]);
    return Number.isFinite(waited) ? waited / 1e6 : undefined;
  } catch {
    return undefined;
  }
}

/** Idle and I/O-wait time of all cores together in ms (the first line of /proc/stat), or undefined. */
function idleMillis(): number | undefined {
  try {
    const fields = fs.readFileSync("/proc/stat", "utf8").split("\n", 1)[0].trim().split(/\s+/);
    return ((Number(fields[4]) + Number(fields[5])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/**
 * "load generator 0.38 cores, idle 0.52 cores; waiting for a core: gateway 21% · load generator 9%",
 * the waits as shares of the run, longest first.
 */
export function formatMachineShare(m: MachineShare): string {
  const cores = `load generator ${m.loadGenerator.toFixed(2)} cores, idle ${m.idle.toFixed(2)} cores`;
  const waits = Object.entries(m.waiting ?? {}).sort((a, b) => b[1] - a[1]);
  if (waits.length === 0) return cores;
  return `${cores}; waiting for a core: ${waits.map(([n, s]) => `${n} ${(s * 100).toFixed(0)}%`).join(" · ")}`;
}

/** "gateway 0.052 · rounds 0.031": each process's CPU ms per request, costliest first, and the sum. */
export function formatCpu(cpu: CpuPerRequest | undefined): string {
  const entries = Object.entries(cpu ?? {}).sort((a, b) => b[1] - a[1]);
  if (entries.length === 0) return "–";
  const total = entries.reduce((s, [, v]) => s + v, 0);
  const parts = entries.map(([name, v]) => `${name} ${v.toFixed(3)}`);
  return entries.length > 1 ? `${parts.join(" · ")} (sum ${total.toFixed(3)})` : parts[0];
}
