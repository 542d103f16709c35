import {
  cpuMeter,
  cpuMillisOf,
  formatCpu,
  formatMachineShare,
  LOAD_GENERATOR,
  machineMeter,
  runQueueMillisOf,
  untilQuiet,
} from "../../../bench/cpu";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import os from "node:os";

/** Burns about `ms` of CPU on this thread. */
function spin(ms: number): void {
  const end = process.hrtime.bigint() + BigInt(ms) * 1_000_000n;
  while (process.hrtime.bigint() < end);
}

describe("bench CPU per request", () => {
  it("when this process has spent CPU, then its reading from /proc agrees with Node's own count", () => {
    const usage = process.cpuUsage();
    const before = cpuMillisOf(process.pid);
    spin(200);
    const spent = process.cpuUsage(usage);
    const after = cpuMillisOf(process.pid);
    expect(before).toBeDefined();
    // /proc counts in ticks of 10 ms; Node in microseconds.
    expect(Math.abs(after! - before! - (spent.user + spent.system) / 1000)).toBeLessThanOrEqual(30);
  });

  it("when the process is gone or was restarted, then it is left out rather than guessed", () => {
    expect(cpuMillisOf(2 ** 22 + 12_345)).toBeUndefined();
    let pid: number | undefined = process.pid;
    const meter = cpuMeter([
      { name: "same", pid: () => process.pid },
      { name: "restarted", pid: () => pid },
    ]);
    spin(100);
    pid = 2 ** 22 + 12_345;
    const cpu = meter.perRequest(10);
    expect(Object.keys(cpu)).toEqual(["same"]);
    expect(cpu.same).toBeGreaterThanOrEqual(0);
  });

  it("when this process spins, then the machine reading counts it as the load generator's, and busy and idle fit the machine", () => {
    const meter = machineMeter();
    spin(300);
    const share = meter.share();
    expect(share).toBeDefined();
    // How much of the wall-clock time the spin got depends on what else runs; only that it counted.
    expect(share!.loadGenerator).toBeGreaterThan(0);
    expect(share!.idle).toBeGreaterThanOrEqual(0);
    // No more idle and busy than there are cores, give or take /proc's ticks of 10 ms.
    expect(share!.loadGenerator + share!.idle).toBeLessThanOrEqual(os.cpus().length + 0.25);
    expect(formatMachineShare({ loadGenerator: 0.384, idle: 0.5 })).toBe(
      "load generator 0.38 cores, idle 0.50 cores",
    );
  });

  it("when processes are watched, then the reading gives each one's wait for a core as a share of the run", () => {
    const gone = 2 ** 22 + 12_345;
    expect(runQueueMillisOf(gone)).toBeUndefined();
    expect(runQueueMillisOf(process.pid)).toBeGreaterThanOrEqual(0);
    const meter = machineMeter([
      { name: "server", pid: () => process.pid },
      { name: "gone", pid: () => gone },
    ]);
    spin(200);
    const waiting = meter.share()!.waiting!;
    // A process that is gone is left out rather than guessed; the load generator is always read.
    expect(Object.keys(waiting).sort()).toEqual([LOAD_GENERATOR, "server"]);
    // How long this thread waited depends on what else runs; only that it is a share of the run.
    expect(waiting.server).toBeGreaterThanOrEqual(0);
    expect(waiting.server).toBeLessThanOrEqual(1.05);
    expect(
      formatMachineShare({ loadGenerator: 0.3, idle: 0.1, waiting: { rounds: 0.094, gateway: 0.21 } }),
    ).toBe("load generator 0.30 cores, idle 0.10 cores; waiting for a core: gateway 21% · rounds 9%");
  });

  it("when several processes were measured, then the costliest comes first with the sum", () => {
    expect(formatCpu({ rounds: 0.031, gateway: 0.052 })).toBe("gateway 0.052 · rounds 0.031 (sum 0.083)");
    expect(formatCpu({ server: 0.04 })).toBe("server 0.040");
    expect(formatCpu(undefined)).toBe("–");
  });

  describe("waiting for a system to go quiet", () => {
    let child: ChildProcess | undefined;
    afterEach(async () => {
      if (child && child.exitCode === null) {
        child.kill("SIGKILL");
        await once(child, "exit");
      }
    });
    /** A process that spins for `ms` (or for ever) and then sleeps until killed. */
    const busyFor = (ms: number | null): ChildProcess =>
      spawn(process.execPath, [
        "-e",
        `const end = ${ms === null ? "Infinity" : `Date.now() + ${ms}`}; while (Date.now() < end); setInterval(() => {}, 1e6);`,
      ]);

    it("when a watched process stops working, then it resolves after that, quiet", async () => {
      child = busyFor(1_200);
      const quiet = await untilQuiet([{ name: "child", pid: () => child?.pid }], { windowMs: 300 });
      expect(quiet.quiet).toBe(true);
      expect(quiet.cores).toBeLessThan(0.05);
      // It waited at least through the spin (less the time the child took to start).
      expect(quiet.waitedMs).toBeGreaterThanOrEqual(600);
    });

    it("when a watched process keeps working, then it gives up at the timeout and says how busy it was", async () => {
      child = busyFor(null);
      const quiet = await untilQuiet([{ name: "child", pid: () => child?.pid }], {
        windowMs: 300,
        timeoutMs: 900,
      });
      expect(quiet.quiet).toBe(false);
      expect(quiet.cores).toBeGreaterThan(0.05);
      expect(quiet.waitedMs).toBeGreaterThanOrEqual(900);
    });
  });
});
