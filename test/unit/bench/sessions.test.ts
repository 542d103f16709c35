import { Sessions, sessionLength } from "../../../bench/sessions";

/** A seeded generator, so the figures below are the same on every run. */
function lcg(seed = 42): () => number {
  let x = seed;
  return () => {
    x = (x * 1664525 + 1013904223) % 2 ** 32;
    return x / 2 ** 32;
  };
}

describe("case 8's session lengths", () => {
  it("when lengths are drawn, then they are whole requests, at least one, geometric with the mean asked for", () => {
    const draw = sessionLength(20, lcg());
    const n = 100_000;
    const lengths = Array.from({ length: n }, draw);
    expect(lengths.every((l) => Number.isInteger(l) && l >= 1)).toBe(true);
    const mean = lengths.reduce((a, b) => a + b, 0) / n;
    expect(mean).toBeGreaterThan(19.5);
    expect(mean).toBeLessThan(20.5);
    // Geometric: a session of one request has the chance 1/20, and P(length > k) = (19/20)^k.
    const share = (pred: (l: number) => boolean) => lengths.filter(pred).length / n;
    expect(share((l) => l === 1)).toBeCloseTo(0.05, 2);
    expect(share((l) => l > 20)).toBeCloseTo(0.95 ** 20, 2);
    expect(share((l) => l > 60)).toBeCloseTo(0.95 ** 60, 2);
  });

  it("when the mean is one request, then every session is one request; below one, it is refused", () => {
    expect(Array.from({ length: 10 }, sessionLength(1, lcg()))).toEqual(Array(10).fill(1));
    expect(() => sessionLength(0.5)).toThrow(/at least 1/);
  });
});

describe("case 8's open sessions", () => {
  it("when requests are drawn, then each session keeps its user for its length and then begins with another", () => {
    let next = 0;
    const users = () => next++;
    // One open session of fixed lengths 3, then 2: users 0, 0, 0, then 1, 1, then 2.
    const lengths = [3, 2, 5];
    const sessions = new Sessions(1, users, () => lengths.shift() as number, lcg());
    expect(Array.from({ length: 6 }, () => sessions.next())).toEqual([0, 0, 0, 1, 1, 2]);
    expect(sessions.started).toBe(3);
  });

  it("when many sessions are open, then about one request in the mean length begins a session", () => {
    const random = lcg(7);
    const sessions = new Sessions(
      256,
      () => Math.floor(random() * 100_000),
      sessionLength(20, random),
      random,
    );
    const n = 200_000;
    for (let i = 0; i < n; i++) sessions.next();
    // The 256 sessions still open when the count stops have used only part of their length.
    expect(sessions.started / n).toBeGreaterThan(0.045);
    expect(sessions.started / n).toBeLessThan(0.055);
  });
});
