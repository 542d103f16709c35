/** The shared sweeper (shared/runtime/sweeper.ts): tasks in order, a failure skips one task only, no overlap, a stop waits. */
import { Sweeper, type SweepTask } from "../../../../shared/runtime/sweeper";

const NOW = new Date("2035-01-01T00:00:00.000Z");

function sweeperOf(tasks: SweepTask[]) {
  const warnings: string[] = [];
  const reports: Record<string, number>[] = [];
  const sweeper = new Sweeper(tasks, {
    intervalMs: 60_000,
    warn: (message) => warnings.push(message),
    report: (removed) => reports.push(removed),
    now: () => NOW,
  });
  return { sweeper, warnings, reports };
}

describe("Sweeper", () => {
  it("when a sweep runs, then each task runs once, in order, with the same now, and what they removed is reported", async () => {
    const calls: string[] = [];
    const task = (name: string, n: number): SweepTask => ({
      name,
      run: async (now) => {
        calls.push(`${name}@${now.toISOString()}`);
        return n;
      },
    });
    const { sweeper, reports } = sweeperOf([task("a", 2), task("b", 0)]);
    await expect(sweeper.sweep()).resolves.toEqual({ a: 2, b: 0 });
    expect(calls).toEqual([`a@${NOW.toISOString()}`, `b@${NOW.toISOString()}`]);
    expect(reports).toEqual([{ a: 2, b: 0 }]);
  });

  it("when nothing was removed, then nothing is reported", async () => {
    const { sweeper, reports } = sweeperOf([{ name: "a", run: async () => 0 }]);
    await sweeper.sweep();
    expect(reports).toEqual([]);
  });

  it("when a task fails, then it is logged and the next task still runs", async () => {
    const { sweeper, warnings } = sweeperOf([
      { name: "broken", run: () => Promise.reject(new Error("store down")) },
      { name: "fine", run: async () => 1 },
    ]);
    await expect(sweeper.sweep()).resolves.toEqual({ fine: 1 });
    expect(warnings).toEqual(["Sweeping broken failed; the next sweep tries again."]);
  });

  it("when a sweep is asked for while one runs, then no second one starts, and a stop waits for the first", async () => {
    let release!: () => void;
    let runs = 0;
    const { sweeper } = sweeperOf([
      {
        name: "slow",
        run: () => {
          runs++;
          return new Promise<number>((r) => (release = () => r(1)));
        },
      },
    ]);
    const first = sweeper.sweep();
    const second = sweeper.sweep();
    expect(second).toBe(first);
    let stopped = false;
    const stopping = sweeper.stop().then(() => (stopped = true));
    await Promise.resolve();
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(runs).toBe(1);
    await expect(sweeper.sweep()).resolves.toEqual({});
  });

  it("when it is stopped before its first sweep, then no timer is left to keep it and its stores in memory", async () => {
    jest.useFakeTimers();
    try {
      let runs = 0;
      const sweeper = new Sweeper([{ name: "t", run: async () => (runs++, 0) }], {
        intervalMs: 60_000,
        firstDelayMs: 60_000,
        warn: () => undefined,
      });
      sweeper.start();
      expect(jest.getTimerCount()).toBe(2);
      await sweeper.stop();
      expect(jest.getTimerCount()).toBe(0);
      jest.advanceTimersByTime(120_000);
      expect(runs).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});
