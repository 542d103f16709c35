import { CONNECT_TIMEOUT_MS, redisClientOptions } from "../../../../shared/runtime/redis-options";

describe("redisClientOptions", () => {
  it("when given a redis:// address with credentials and a database, then the client gets each, with auto-pipelining and a short connect timeout", () => {
    expect(redisClientOptions("redis://user:p%40ss@cache.internal:6380/2")).toEqual({
      host: "cache.internal",
      port: "6380",
      username: "user",
      password: "p@ss",
      db: "2",
      enableAutoPipelining: true,
      connectTimeout: CONNECT_TIMEOUT_MS,
    });
  });

  it("when given a rediss:// address, then the client speaks TLS", () => {
    expect(redisClientOptions("rediss://cache.internal:6379")).toMatchObject({
      host: "cache.internal",
      tls: {},
      enableAutoPipelining: true,
    });
  });
});
