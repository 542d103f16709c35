import {
  enforceLimit,
  MemoryCounterStore,
  parseLimits,
  RateLimitedError,
} from "../../../../services/gateway/rate-limit";

describe("parseLimits", () => {
  it("when limits are given per action with a default, then each is read", () => {
    expect(parseLimits("rounds.join=60, *=1200")).toEqual(
      new Map([
        ["rounds.join", 60],
        ["*", 1200],
      ]),
    );
    expect(parseLimits("")).toEqual(new Map());
  });

  it.each(["rounds.join", "rounds.join=x", "=5", "a=-1"])(
    "when the text is %j, then it is refused",
    (text) => {
      expect(() => parseLimits(text)).toThrow(/Bad rate limit/);
    },
  );
});

describe("enforceLimit with the memory store", () => {
  it("when a caller passes the limit within a minute, then RateLimitedError with the seconds left in the window", async () => {
    const store = new MemoryCounterStore();
    const limits = parseLimits("a=2");
    const t = Date.UTC(2030, 0, 1, 0, 0, 45);
    await enforceLimit(store, limits, "a", "u", t);
    await enforceLimit(store, limits, "a", "u", t);
    const err = await enforceLimit(store, limits, "a", "u", t).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(err).toMatchObject({ code: 429, retryAfterSeconds: 15, message: "Too Many Requests" });
    await expect(enforceLimit(store, limits, "a", "u", t + 16_000)).resolves.toBeUndefined();
  });

  it("when a new minute begins, then the counts of the minutes before it are dropped whole", async () => {
    const store = new MemoryCounterStore();
    const limits = parseLimits("a=1");
    const t = Date.UTC(2030, 0, 1, 0, 0, 10);
    for (let i = 0; i < 150_000; i++) await enforceLimit(store, limits, "a", `ip:${i}`, t);
    expect(store.size).toBe(150_000);
    // Past any size, each caller still has its own count within the minute.
    await expect(enforceLimit(store, limits, "a", "ip:149999", t)).rejects.toBeInstanceOf(RateLimitedError);
    await expect(enforceLimit(store, limits, "a", "ip:new", t)).resolves.toBeUndefined();
    await expect(enforceLimit(store, limits, "a", "ip:0", t + 60_000)).resolves.toBeUndefined();
    expect(store.size).toBe(1);
  });

  it("when an action has no limit and there is no default, then nothing is counted", async () => {
    const store = new MemoryCounterStore();
    for (let i = 0; i < 10; i++)
      await expect(enforceLimit(store, parseLimits("b=1"), "a", "u")).resolves.toBeUndefined();
  });
});

describe("parseLimits of the defaults", () => {
  it("when the text is none, then there are no limits", () => {
    expect(parseLimits("none")).toEqual(new Map());
    expect(parseLimits(" NONE ")).toEqual(new Map());
  });

  it("when an action is given again after the default list, then the later entry wins", () => {
    expect(parseLimits("rounds.join=120,auth.refresh=60,rounds.join=1000").get("rounds.join")).toBe(1000);
  });
});
