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
import { MetricNames } from "./metric-names";
import { storeWriteErrors } from "./metrics";

export const STORE_WRITE_ERRORS = MetricNames.storeWriteErrors;

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
  // Registered and shown at 0 by the first process part that asks (shared/runtime/metrics).
  const counter = storeWriteErrors(broker);
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
