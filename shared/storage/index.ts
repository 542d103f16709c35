/**
 * Opens the store the configuration selects: MongoDB when MONGO_URI is set, else the embedded engine
 * (files under DATA_DIR, or memory). One store per broker, shared by the services of that process; each
 * service still touches only its own collections. The MongoDB engine (mongoose, its driver and BSON) is
 * loaded only when MONGO_URI is set: a process on the embedded engine never uses it, and loaded it holds
 * memory from start to end (docs/decisions/0060-node-24-production.md).
 */
import path from "node:path";
import type { Config } from "../config";
import { NedbStore } from "./nedb";
import type { Store } from "./port";
import type { StoreWatch } from "./write-failures";

export * from "./port";
export { NedbStore } from "./nedb";
export { quietWatch, type StoreWatch, type WriteFailure } from "./write-failures";

/** Where the embedded engine keeps its files under DATA_DIR. */
export const dbDir = (config: Pick<Config, "dataDir">): string => path.join(config.dataDir, "db");

/** `watch` hears of writes the store could not make (shared/runtime/store-watch counts and logs them). */
export async function openStore(config: Config, watch?: StoreWatch): Promise<Store> {
  if (config.mongoUri) {
    const { MongoStore } = await import("./mongo");
    return MongoStore.connect(config.mongoUri, { watch, auth: config });
  }
  return new NedbStore(dbDir(config), { watch });
}

const stores = new WeakMap<object, Promise<Store>>();

/** The store of a broker, opened on first use (with the `watch` of that first use). */
export function storeOf(broker: object, config: Config, watch?: StoreWatch): Promise<Store> {
  let store = stores.get(broker);
  if (!store) {
    store = openStore(config, watch);
    stores.set(broker, store);
  }
  return store;
}

/** Closes the broker's store if it was opened (called when the broker stops). */
export async function closeStoreOf(broker: object): Promise<void> {
  const store = stores.get(broker);
  stores.delete(broker);
  if (store) await (await store).close();
}
