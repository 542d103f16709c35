import type { Service } from "moleculer";
import { configOf, type Config } from "../config";
import { storeOf, type Store } from "../storage";
import { storeWatch } from "./store-watch";

/** The configuration bound to the service's broker. */
export const serviceConfig = (service: Service): Config => configOf(service.broker);

/**
 * The store of the service's process (opened on first use, closed with the broker); its failed writes
 * are counted and logged (./store-watch).
 */
export const serviceStore = (service: Service): Promise<Store> =>
  storeOf(service.broker, configOf(service.broker), storeWatch(service.broker));

/**
 * Removes cached entries: exact keys are deleted one by one, and only patterns with a wildcard are
 * matched, since Moleculer's `clean` walks every key of the cache (a SCAN of all of Redis) even for a
 * pattern that names one key. A no-op when the broker has no cacher.
 */
export async function cleanCache(service: Service, ...patterns: string[]): Promise<void> {
  const cacher = service.broker.cacher;
  if (!cacher) return;
  const exact = patterns.filter((p) => !p.includes("*"));
  const wild = patterns.filter((p) => p.includes("*"));
  await Promise.all([...(exact.length > 0 ? [cacher.del(exact)] : []), ...wild.map((p) => cacher.clean(p))]);
}

/**
 * The answer kept under `key` in the broker's cacher, else `load`'s, kept there when `keep` says so
 * (always, by default). `key` is undefined when the broker has no cacher; `load` then answers every
 * time. A `keep` that refuses an answer missing an id means creating that id later needs no clean-up
 * of every key that may hold the miss (a scan of all of Redis, `cleanCache`).
 */
export async function cached<T>(
  service: Service,
  key: string | undefined,
  load: () => Promise<T>,
  keep: (answer: T) => boolean = () => true,
): Promise<T> {
  const cacher = service.broker.cacher;
  if (!cacher || key === undefined) return load();
  const kept = (await cacher.get(key)) as T | null | undefined;
  if (kept !== null && kept !== undefined) return kept;
  const answer = await load();
  if (keep(answer)) await cacher.set(key, answer);
  return answer;
}

/**
 * For actions that are not idempotent (they create something, or append): a caller must never repeat
 * them on its own after a timeout, when the first call may well have done its work.
 */
export const noRetry = { enabled: false } as const;
