/**
 * The client options for a `redis://` (or `rediss://`) address, as ioredis reads the address itself,
 * plus auto-pipelining: commands issued during one turn of the event loop go to Redis in one write
 * (ioredis sends them at `setImmediate`), not one write and one packet each. Under load every read that
 * misses the in-process cache asks Redis, so this is one syscall per turn instead of one per request.
 */
import type { RedisOptions } from "ioredis";
import { parseURL } from "ioredis/built/utils";

export function redisClientOptions(url: string): RedisOptions {
  return {
    ...(parseURL(url) as RedisOptions),
    ...(url.startsWith("rediss://") ? { tls: {} } : {}),
    enableAutoPipelining: true,
  };
}
