import { Errors } from "moleculer";
import { MIX, parseMix, percentile, repeatable, routePicker } from "../../../bench/mixed";
import { zipf } from "../../../bench/zipf";

/** A seeded generator, so the shares below are the same on every run. */
function lcg(seed = 42): () => number {
  let x = seed;
  return () => {
    x = (x * 1664525 + 1013904223) % 2 ** 32;
    return x / 2 ** 32;
  };
}

describe("bench case 8 draws", () => {
  it("draws rounds Zipf-like: a few hot, every one reachable, none out of range", () => {
    const draw = zipf(10_000, 1, lcg());
    const counts = new Map<number, number>();
    const n = 200_000;
    let [min, max] = [Infinity, -Infinity];
    for (let i = 0; i < n; i++) {
      const k = draw();
      [min, max] = [Math.min(min, k), Math.max(max, k)];
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    expect(min).toBe(0);
    expect(max).toBeLessThan(10_000);
    expect(Number.isInteger(max)).toBe(true);
    const share = (k: number) => (counts.get(k) ?? 0) / n;
    // H(10,000) ≈ 9.79: the first round takes about 10%, the second about half of that.
    expect(share(0)).toBeGreaterThan(0.09);
    expect(share(0)).toBeLessThan(0.115);
    expect(share(1) / share(0)).toBeGreaterThan(0.4);
    expect(share(1) / share(0)).toBeLessThan(0.6);
    const top100 = [...Array(100).keys()].reduce((a, k) => a + share(k), 0);
    expect(top100).toBeGreaterThan(0.45);
    expect(top100).toBeLessThan(0.6);
  });

  it("picks routes with the mix's shares", () => {
    const pick = routePicker(lcg(7));
    const n = 100_000;
    const counts: Record<string, number> = {};
    for (let i = 0; i < n; i++) {
      const r = pick();
      counts[r] = (counts[r] ?? 0) + 1;
    }
    expect(Object.values(MIX).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 10);
    for (const [route, share] of Object.entries(MIX)) expect(counts[route] / n).toBeCloseTo(share, 2);
  });

  it("when --mix names some routes, then only those are drawn, in proportion to their weights", () => {
    const mix = parseMix("round=80,join=20");
    expect(mix).toEqual({ round: 0.8, friends: 0, payments: 0, join: 0.2, refresh: 0, settings: 0 });
    const pick = routePicker(lcg(3), mix);
    const counts: Record<string, number> = {};
    for (let i = 0; i < 50_000; i++) {
      const r = pick();
      counts[r] = (counts[r] ?? 0) + 1;
    }
    expect(Object.keys(counts).sort()).toEqual(["join", "round"]);
    expect(counts.join / 50_000).toBeCloseTo(0.2, 2);
  });

  it("when --mix names an unknown route or no weight, then it is refused", () => {
    expect(() => parseMix("rounds=1")).toThrow(/route=weight/);
    expect(() => parseMix("round=0")).toThrow(/route=weight/);
    expect(() => parseMix("")).toThrow(/no route/);
  });

  it("reads percentiles of sorted latencies", () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(sorted, 50)).toBe(50);
    expect(percentile(sorted, 99)).toBe(99);
    expect(percentile([], 99)).toBe(0);
  });
});

describe("bench case 8 seeding", () => {
  const failing = (errors: Error[], result = "done") => {
    let calls = 0;
    const fn = () => {
      const err = errors[calls++];
      return err ? Promise.reject(err) : Promise.resolve(result);
    };
    return { fn, calls: () => calls };
  };

  it("when a harmless call fails with retryable errors, then it is tried again and each repeat counted", async () => {
    const rejected = new Errors.RequestRejectedError({ action: "auth.issueTokens", nodeID: "auth-1" });
    const { fn, calls } = failing([rejected, rejected]);
    let repeats = 0;
    await expect(repeatable(fn, () => repeats++, 1)).resolves.toBe("done");
    expect(calls()).toBe(3);
    expect(repeats).toBe(2);
  });

  it("when a call fails with an error that is not retryable, then it fails at once", async () => {
    const conflict = new Errors.MoleculerClientError("taken", 409, "CONFLICT");
    const { fn, calls } = failing([conflict]);
    await expect(repeatable(fn, () => undefined, 1)).rejects.toBe(conflict);
    expect(calls()).toBe(1);
  });

  it("when a call keeps failing, then the last error ends it after a bounded number of tries", async () => {
    const timeout = new Errors.RequestTimeoutError({ action: "users.addFriends", nodeID: "users-1" });
    const { fn, calls } = failing(Array.from({ length: 10 }, () => timeout));
    await expect(repeatable(fn, () => undefined, 1)).rejects.toBe(timeout);
    expect(calls()).toBe(4);
  });
});
