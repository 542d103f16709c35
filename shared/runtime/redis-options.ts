/**
 * The client options for a `redis://` (or `rediss://`) address, as ioredis reads the address itself,
 * plus the ACL user and password of REDIS_USER and REDIS_PASSWORD (kept out of the address, which may be
 * logged: shared/config refuses credentials in CACHER), plus auto-pipelining: commands issued during one
 * turn of the event loop go to Redis in one write (ioredis sends them at `setImmediate`), not one write
 * and one packet each. Under load every read that misses the in-process cache asks Redis, so this is one
 * syscall per turn instead of one per request.
 */
import type { RedisOptions } from "ioredis";
import { parseURL } from "ioredis/built/utils";
import type { Config } from "../config";

export type RedisCredentials = Pick<Config, "redisUser" | "redisPassword">;

export function redisClientOptions(
  url: string,
  credentials: RedisCredentials = { redisUser: "", redisPassword: "" },
): RedisOptions {
  return {
    ...(parseURL(url) as RedisOptions),
    ...(url.startsWith("rediss://") ? { tls: {} } : {}),
    ...(credentials.redisUser
      ? { username: credentials.redisUser, password: credentials.redisPassword }
      : {}),
    enableAutoPipelining: true,
  };
}

/** True when CACHER names a Redis server rather than the in-process cache. */
export const isRedis = (cacher: string): boolean => /^rediss?:\/\//i.test(cacher);
