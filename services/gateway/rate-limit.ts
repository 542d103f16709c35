/**
 * Rate limiting per route and caller, in fixed one-minute windows. The counter lives in Redis when the
 * cacher is Redis (one limit for the whole cluster, whichever gateway answers) and in memory otherwise.
 * The caller is the user (bearer routes), the API key (key routes) or the client address
 * (gateway/client-address: X-Forwarded-For only from TRUSTED_PROXIES). The limits per address counted
 * before authentication are gateway/address-limits.
 */
import Redis from "ioredis";
import { AppError, ErrorType } from "../../shared/errors";
import { redisClientOptions, type RedisCredentials } from "../../shared/runtime/redis-options";

export class RateLimitedError extends AppError {
  constructor(readonly retryAfterSeconds: number) {
    super("Too Many Requests", 429, ErrorType.RATE_LIMITED, { retryAfter: retryAfterSeconds });
  }
}

export interface CounterStore {
  /** Adds one to the key's count in the window that ends at `windowEnd` (ms); resolves to the new count. */
  hit(key: string, windowEnd: number): Promise<number>;
  close(): Promise<void>;
}

export class MemoryCounterStore implements CounterStore {
  /**
   * Counts by the end of their window, then by key. A window's counts go together once a later window
   * has begun, so a hit costs the same however many callers the minute has seen (a walk over the
   * counts to find ended ones, on each hit past a size, made every hit cost that walk once a minute
   * held that many callers).
   */
  private readonly windows = new Map<number, Map<string, number>>();

  async hit(key: string, windowEnd: number): Promise<number> {
    let counts = this.windows.get(windowEnd);
    if (!counts) {
      for (const end of this.windows.keys()) if (end < windowEnd) this.windows.delete(end);
      counts = new Map();
      this.windows.set(windowEnd, counts);
    }
    const n = (counts.get(key) ?? 0) + 1;
    counts.set(key, n);
    return n;
  }

  /** How many counts are held, over every window still kept. */
  get size(): number {
    let size = 0;
    for (const counts of this.windows.values()) size += counts.size;
    return size;
  }

  async close(): Promise<void> {}
}

/** Longest wait for Redis's count of one request (a count takes well under a millisecond). */
export const COUNT_TIMEOUT_MS = 250;

export class RedisCounterStore implements CounterStore {
  private readonly redis: Redis;

  constructor(
    url: string,
    private readonly prefix: string,
    credentials?: RedisCredentials,
  ) {
    // A count comes soon or not at all: while Redis is away (no connection yet, or one gone silent)
    // a request is let through (the gateway's limitRate) after COUNT_TIMEOUT_MS at most, never held
    // until the client reconnects. (ioredis times a command queued while it connects too.)
    this.redis = new Redis({
      ...redisClientOptions(url, credentials),
      lazyConnect: false,
      maxRetriesPerRequest: 1,
      commandTimeout: COUNT_TIMEOUT_MS,
    });
  }

  async hit(key: string, windowEnd: number): Promise<number> {
    const k = `${this.prefix}:${key}:${windowEnd}`;
    const [[, count]] = (await this.redis
      .multi()
      .incr(k)
      .pexpireat(k, windowEnd + 1000)
      .exec()) as [[Error | null, number], unknown];
    return count;
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}

/** "rounds.get=600,rounds.join=60,*=1200": limits per minute by action, `*` for the rest; "none": none. */
export function parseLimits(text: string): Map<string, number> {
  const limits = new Map<string, number>();
  if (text.trim().toLowerCase() === "none") return limits;
  for (const part of text
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [name, value] = part.split("=");
    const n = Number(value);
    if (!name || !Number.isInteger(n) || n < 0)
      throw new Error(`Bad rate limit "${part}" (want action=count)`);
    limits.set(name.trim(), n);
  }
  return limits;
}

const WINDOW_MS = 60_000;

/** Throws RateLimitedError when the caller is over the route's limit (0 or no limit: unlimited). */
export async function enforceLimit(
  store: CounterStore,
  limits: Map<string, number>,
  action: string,
  caller: string,
  now = Date.now(),
): Promise<void> {
  const limit = limits.get(action) ?? limits.get("*") ?? 0;
  if (limit <= 0) return;
  const windowEnd = Math.floor(now / WINDOW_MS) * WINDOW_MS + WINDOW_MS;
  const count = await store.hit(`${action}:${caller}`, windowEnd);
  if (count > limit) throw new RateLimitedError(Math.max(1, Math.ceil((windowEnd - now) / 1000)));
}
