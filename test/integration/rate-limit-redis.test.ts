/** The rate-limit counters in a real (private) redis-server: one limit for every gateway of a cluster. */
import { enforceLimit, RateLimitedError, RedisCounterStore } from "../../services/gateway/rate-limit";
import { freePort, requireBinary, startRedisServer, type RunningBroker } from "../support/brokers";

const maybe = requireBinary("redis-server") ? describe : describe.skip;

maybe("Redis rate-limit counters", () => {
  let redis: RunningBroker;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it("when two gateways count the same caller, then they share one limit", async () => {
    const a = new RedisCounterStore(redis.url, "t1");
    const b = new RedisCounterStore(redis.url, "t1");
    const limits = new Map([["rounds.join", 3]]);
    try {
      const now = Date.now();
      await enforceLimit(a, limits, "rounds.join", "user:1", now);
      await enforceLimit(b, limits, "rounds.join", "user:1", now);
      await enforceLimit(a, limits, "rounds.join", "user:1", now);
      await expect(enforceLimit(b, limits, "rounds.join", "user:1", now)).rejects.toBeInstanceOf(
        RateLimitedError,
      );
      await expect(enforceLimit(b, limits, "rounds.join", "user:2", now)).resolves.toBeUndefined();
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("when the next minute starts, then the caller is allowed again", async () => {
    const store = new RedisCounterStore(redis.url, "t2");
    const limits = new Map([["*", 1]]);
    try {
      const t = Date.UTC(2030, 0, 1, 12, 0, 30);
      await enforceLimit(store, limits, "x", "ip:1", t);
      await expect(enforceLimit(store, limits, "x", "ip:1", t + 1000)).rejects.toMatchObject({
        code: 429,
        retryAfterSeconds: 29,
      });
      await expect(enforceLimit(store, limits, "x", "ip:1", t + 31_000)).resolves.toBeUndefined();
    } finally {
      await store.close();
    }
  });

  // Without COUNT_TIMEOUT_MS a count sent to a silent server would wait as long as the connection
  // lives (no error ever comes back): the test's own timeout would end it.
  it("when redis-server stops answering, then a count fails instead of waiting, and counts again once it answers", async () => {
    const store = new RedisCounterStore(redis.url, "t3");
    try {
      await expect(store.hit("ip:1", Date.now() + 60_000)).resolves.toBe(1);
      redis.process.kill("SIGSTOP");
      try {
        await expect(store.hit("ip:1", Date.now() + 60_000)).rejects.toThrow(/timed out/i);
      } finally {
        redis.process.kill("SIGCONT");
      }
      await expect(store.hit("ip:2", Date.now() + 60_000)).resolves.toBe(1);
    } finally {
      await store.close();
    }
  }, 5000);

  it("when no redis-server listens, then a count fails within its bound rather than waiting for a connection", async () => {
    const store = new RedisCounterStore(`redis://127.0.0.1:${await freePort()}`, "t4");
    try {
      // Refused, the client gives the command up after its one retry; unanswered, after COUNT_TIMEOUT_MS.
      await expect(store.hit("ip:1", Date.now() + 60_000)).rejects.toThrow();
    } finally {
      await store.close();
    }
  }, 5000);
});
