/**
 * The client options for a `redis://` (or `rediss://`) address, as ioredis reads the address itself,
 * plus the ACL user and password of REDIS_USER and REDIS_PASSWORD (kept out of the address, which may be
 * logged: shared/config refuses credentials in CACHER), plus auto-pipelining: commands issued during one
 * turn of the event loop go to Redis in one write (ioredis sends them at `setImmediate`), not one write
 * and one packet each. Under load every read that misses the in-process cache asks Redis, so this is one
 * syscall per turn instead of one per request.
 *
 * Connecting gives up after CONNECT_TIMEOUT_MS (ioredis waits 10 s by default). A Redis that restarts
 * elsewhere (a container or pod with a new address) leaves the client's attempt to the old address
 * unanswered, not refused: with the default every command queued meanwhile waited those 10 s, past
 * the callers' REQUEST_TIMEOUT_MS, where a second attempt would already have reached the new address.
 */
import type { RedisOptions } from "ioredis";
import { parseURL } from "ioredis/built/utils";
import type { Config } from "../config";

/** A Redis on the cluster's network answers a connection within milliseconds; this much is a lost one. */
export const CONNECT_TIMEOUT_MS = 1000;

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
    connectTimeout: CONNECT_TIMEOUT_MS,
  };
}

/** True when CACHER names a Redis server rather than the in-process cache. */
export const isRedis = (cacher: string): boolean => /^rediss?:\/\//i.test(cacher);
