/**
 * stores: stores with their managers, and their items (products and event items). Rounds read items
 * through `item` (cached). Creating store events over HTTP comes with the store-events issue (501 now).
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import type { ParamsOf, ResultOf } from "../shared/contracts";
import { CreateItemParams, CreateStoreParams, GetItemParams } from "../shared/contracts/stores";
import type { Config } from "../shared/config";
import { NotFoundError, NotImplementedError } from "../shared/errors";
import { serviceConfig, serviceStore } from "../shared/runtime";
import { StoresRepository, toItemInfo, toStoreInfo } from "./stores/stores.repository";

interface StoresService extends Service {
  config: Config;
  repo: StoresRepository;
}

const StoresServiceSchema: ServiceSchema<Record<string, never>, StoresService> = {
  name: "stores",

  actions: {
    item: {
      visibility: "public",
      params: GetItemParams,
      cache: { keys: ["id"] },
      async handler(
        this: StoresService,
        ctx: Context<ParamsOf<"stores.item">>,
      ): Promise<ResultOf<"stores.item">> {
        const item = await this.repo.findItem(ctx.params.id);
        const store = item && (await this.repo.findStore(item.store_id));
        if (!item || !store) throw new NotFoundError("Item not found");
        return toItemInfo(item, store);
      },
    },

    createStore: {
      visibility: "public",
      params: CreateStoreParams,
      async handler(
        this: StoresService,
        ctx: Context<ParamsOf<"stores.createStore">>,
      ): Promise<ResultOf<"stores.createStore">> {
        const doc = await this.repo.createStore(ctx.params, this.config.defaultCurrency, new Date());
        return { ...toStoreInfo(doc), manager_ids: doc.manager_ids };
      },
    },

    createItem: {
      visibility: "public",
      params: CreateItemParams,
      async handler(
        this: StoresService,
        ctx: Context<ParamsOf<"stores.createItem">>,
      ): Promise<ResultOf<"stores.createItem">> {
        const store = await this.repo.findStore(ctx.params.store_id);
        if (!store) throw new NotFoundError("Store not found");
        return toItemInfo(await this.repo.createItem(ctx.params, new Date()), store);
      },
    },

    createEvent: {
      handler(): never {
        throw new NotImplementedError();
      },
    },
  },

  created(this: StoresService) {
    this.config = serviceConfig(this);
  },

  async started(this: StoresService) {
    this.repo = new StoresRepository(await serviceStore(this));
    await this.repo.init();
  },
};

export default StoresServiceSchema;
