/**
 * A stand-in stores service: it answers well enough for the seed, then, once `breakNow()` is called,
 * `stores.item` fails with a plain Error (a fault no error class covers).
 */
import type { ServiceSchema } from "moleculer";

export function faultyStores(message: string): { schema: ServiceSchema; breakNow(): void } {
  let failing = false;
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
      item: { visibility: "public", handler: () => (failing ? Promise.reject(new Error(message)) : item) },
      createStore: { visibility: "public", handler: () => ({ ...store, manager_ids: [] }) },
      createItem: { visibility: "public", handler: () => ({ id: item.id }) },
    },
  };
  return {
    schema,
    breakNow: () => {
      failing = true;
    },
  };
}
