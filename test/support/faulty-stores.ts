/**
 * A stand-in stores service: it answers well enough for the seed, then, once `breakNow()` is called,
 * `stores.item` fails with a plain Error (a fault no error class covers); once `hangNow()` is called,
 * it answers only when `release()` is.
 */
import type { ServiceSchema } from "moleculer";

export interface FaultyStores {
  schema: ServiceSchema;
  breakNow(): void;
  hangNow(): void;
  release(): void;
}

export function faultyStores(message: string): FaultyStores {
  let failing = false;
  let hung: Promise<void> | null = null;
  let release = () => undefined as void;
  const store = { id: 1, name: "s", logo_url: null, is_blogger: false, currency: "RUB" };
  const item = {
    id: "item-1",
    kind: "product",
    name: "i",
    platform_price: 1,
    assets: [],
    attribute_values: [],
    store,
  };
  const schema: ServiceSchema = {
    name: "stores",
    actions: {
      item: {
        visibility: "public",
        handler: () => (failing ? Promise.reject(new Error(message)) : hung ? hung.then(() => item) : item),
      },
      createStore: { visibility: "public", handler: () => ({ ...store, manager_ids: [] }) },
      createItem: { visibility: "public", handler: () => ({ id: item.id }) },
    },
  };
  return {
    schema,
    breakNow: () => {
      failing = true;
    },
    hangNow: () => {
      hung = new Promise<void>((resolve) => (release = resolve));
    },
    release: () => {
      hung = null;
      release();
    },
  };
}
