/**
 * What a process does with the writes its store could not make (shared/storage/write-failures): each
 * failed operation is counted on /metrics as `store_write_errors_total{store, code}`, and each change
 * of a collection's state is one log line naming the collection and its file (or MongoDB namespace):
 * an error when its writes start failing (or fail with another code), a warning when they succeed
 * again. Not a line per request: a full disk under load would bury everything else
 * (docs/decisions/0079-store-write-errors.md).
 */
import type { ServiceBroker } from "moleculer";
import type { StoreWatch } from "../storage";

export const STORE_WRITE_ERRORS = "store.write.errors.total";

interface CounterLike {
  increment(labels?: Record<string, string>, value?: number): void;
}

const watches = new WeakMap<ServiceBroker, StoreWatch>();

/** The watch of a broker's store (one per broker: the metric is registered once). */
export function storeWatch(broker: ServiceBroker): StoreWatch {
  let watch = watches.get(broker);
  if (!watch) {
    watch = createWatch(broker);
    watches.set(broker, watch);
  }
  return watch;
}

function createWatch(broker: ServiceBroker): StoreWatch {
  const logger = broker.getLogger("store");
  let counter: CounterLike | null = null;
  if (broker.isMetricsEnabled()) {
    counter = broker.metrics.register({
      type: "counter",
      name: STORE_WRITE_ERRORS,
      description:
        "Store operations failed because the store could not be written (full, read-only, failing)",
      labelNames: ["store", "code"],
      unit: "operation",
    }) as unknown as CounterLike;
    // Shown from the start (Prometheus leaves out a metric that has no value yet).
    counter.increment(undefined, 0);
  }
  return {
    failed: (f) => counter?.increment({ store: f.store, code: f.code }),
    failing: (f) =>
      logger.error(
        `Store writes fail: ${f.store} (${f.path}): ${f.message.includes(f.code) ? f.message : `${f.code}, ${f.message}`}. ` +
          `Storage ${f.reason === "full" ? "is full" : "cannot be written"}: clients get 507 until writes succeed again ` +
          `(checked at most once a second on the embedded store); counted in ${STORE_WRITE_ERRORS.replace(/\./g, "_")}.`,
      ),
    recovered: (r) =>
      logger.warn(
        `Store writes succeed again: ${r.store} (${r.path}), after ${r.failures} failed operations ` +
          `since ${r.since.toISOString()}.`,
      ),
  };
}
