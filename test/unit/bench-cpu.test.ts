import { cpuMeter, cpuMillisOf, formatCpu } from "../../bench/cpu";

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

  it("when several processes were measured, then the costliest comes first with the sum", () => {
    expect(formatCpu({ rounds: 0.031, gateway: 0.052 })).toBe("gateway 0.052 · rounds 0.031 (sum 0.083)");
    expect(formatCpu({ server: 0.04 })).toBe("server 0.040");
    expect(formatCpu(undefined)).toBe("–");
  });
});
