/** The stores service's collections: stores (integer ids, as the spec types them), items, id counters. */
import { randomUUID } from "node:crypto";
import type { Collection, Store } from "../../shared/storage";
import { DocumentOutbox, outboxOnInsert, type OutboxEntry, type OutboxFields } from "../../shared/outbox";
import type { CreateItemParams, CreateStoreParams, ItemInfo, StoreInfo } from "../../shared/contracts/stores";
import type { QuestionInfo } from "../../shared/contracts/rounds";
import type { EventInput } from "./event-form";

export interface StoreDoc {
  _id: number;
  name: string;
  logo_url: string | null;
  is_blogger: boolean;
  currency: string;
  manager_ids: string[];
  created_at: Date;
}

export type ItemDoc = Omit<ItemInfo, "id" | "store"> &
  OutboxFields & {
    _id: string;
    store_id: number;
    start_time: Date | null;
    created_at: Date;
    /** Only on event items: what the event form adds to an item. */
    event?: {
      price: number;
      is_active: boolean;
      discount_percent: number;
      end_time: Date;
      cover_picture: string;
      question_id: number;
      created_by: string;
      /** The fingerprint of the request that made it, when it came with an Idempotency-Key (event-replay.ts). */
      request_hash?: string;
    };
  };

interface CounterDoc {
  _id: string;
  seq: number;
}

export const toStoreInfo = (doc: StoreDoc): StoreInfo => ({
  id: doc._id,
  name: doc.name,
  logo_url: doc.logo_url,
  is_blogger: doc.is_blogger,
  currency: doc.currency,
});

export const toItemInfo = (item: ItemDoc, store: StoreDoc): ItemInfo => ({
  id: item._id,
  kind: item.kind,
  name: item.name,
  sku: item.sku,
  platform_price: item.platform_price,
  assets: item.assets,
  duration: item.duration,
  meeting_link: item.meeting_link,
  meeting_password: item.meeting_password,
  meeting_platform: item.meeting_platform,
  event_type: item.event_type,
  short_desc: item.short_desc,
  detail_desc: item.detail_desc,
  participants_limit: item.participants_limit,
  category: item.category,
  location: item.location,
  attribute_values: item.attribute_values,
  // The managers see an event round's meeting link and password (docs/decisions/0019).
  store: { ...toStoreInfo(store), manager_ids: store.manager_ids },
});

export class StoresRepository {
  private readonly stores: Collection<StoreDoc>;
  private readonly items: Collection<ItemDoc>;
  /** Store events recorded and not yet published (see shared/outbox). */
  readonly outbox: DocumentOutbox<ItemDoc>;
  private readonly counters: Collection<CounterDoc>;

  constructor(store: Store) {
    this.stores = store.collection<StoreDoc>("stores");
    this.items = store.collection<ItemDoc>("items");
    this.counters = store.collection<CounterDoc>("counters");
    this.outbox = new DocumentOutbox(this.items);
  }

  async init(): Promise<void> {
    await this.items.createIndex({ fields: ["store_id"] });
    // What the media sweep asks of every picture in place (services/stores/media-sweep.ts).
    await this.items.createIndex({ fields: ["assets.path"] });
    await this.outbox.init();
  }

  /** Whether an item shows the picture `name` of the media folder (an event's cover is one of its assets). */
  async pictureInUse(name: string): Promise<boolean> {
    return (await this.items.count({ "assets.path": `/media/${name}` })) > 0;
  }

  /** The next integer id of a sequence; atomic on both engines (upsert with $inc). */
  async nextId(sequence: string): Promise<number> {
    const doc = await this.counters.findOneAndUpdate(
      { _id: sequence },
      { $inc: { seq: 1 } },
      { upsert: true },
    );
    if (!doc) throw new Error(`Counter ${sequence} did not advance`);
    return doc.seq;
  }

  findStore(id: number): Promise<StoreDoc | null> {
    return this.stores.findOne({ _id: id });
  }

  async createStore(input: CreateStoreParams, currency: string, now: Date): Promise<StoreDoc> {
    return this.stores.insertOne({
      _id: await this.nextId("stores"),
      name: input.name,
      logo_url: input.logo_url ?? null,
      is_blogger: input.is_blogger,
      currency: input.currency ?? currency,
      manager_ids: input.manager_ids,
      created_at: now,
    });
  }

  findItem(id: string): Promise<ItemDoc | null> {
    return this.items.findOne({ _id: id });
  }

  createItem(input: CreateItemParams, now: Date): Promise<ItemDoc> {
    return this.items.insertOne({
      _id: randomUUID(),
      store_id: input.store_id,
      kind: input.kind,
      name: input.name,
      sku: input.sku ?? null,
      platform_price: input.platform_price,
      assets: input.assets,
      duration: input.duration ?? null,
      meeting_link: input.meeting_link ?? null,
      meeting_password: input.meeting_password ?? null,
      meeting_platform: input.meeting_platform ?? null,
      event_type: input.event_type ?? null,
      short_desc: input.short_desc ?? null,
      detail_desc: input.detail_desc ?? null,
      participants_limit: input.participants_limit ?? null,
      category: input.category ?? null,
      location: input.location ?? null,
      attribute_values: input.attribute_values,
      start_time: input.start_time ? new Date(input.start_time) : null,
      created_at: now,
    });
  }

  /**
   * Inserts the event item (its cover picture is also its primary asset) together with what `announce`
   * derives from it (`store.event.created`) in the item's outbox: one insert, so the event and its
   * announcement exist together or not at all. With an Idempotency-Key, `id` is the key's event id and
   * `requestHash` the request's fingerprint; a second insert of that id is a DuplicateKeyError.
   */
  createEventItem(
    e: {
      store: StoreDoc;
      form: EventInput;
      question: QuestionInfo;
      pictureName: string;
      createdBy: string;
      id?: string;
      requestHash?: string;
    },
    now: Date,
    announce: (item: ItemDoc) => OutboxEntry[] = () => [],
  ): Promise<ItemDoc> {
    const f = e.form;
    const item: ItemDoc = {
      _id: e.id ?? randomUUID(),
      store_id: e.store._id,
      kind: "event",
      name: f.name,
      sku: null,
      // No platform commission is modelled: the platform price is the store's price.
      platform_price: f.price,
      assets: [
        { name: "cover", path: `/media/${e.pictureName}`, type: "image", sort_order: 0, is_primary: true },
      ],
      duration: f.duration,
      meeting_link: f.meeting_link,
      meeting_password: f.meeting_password,
      meeting_platform: f.meeting_platform,
      event_type: f.event_type,
      short_desc: f.short_desc,
      detail_desc: f.detail_desc,
      participants_limit: f.participants_limit,
      category: null,
      location:
        f.address !== null && f.latitude !== null && f.longitude !== null
          ? {
              country: f.country,
              city: f.city,
              address: f.address,
              latitude: String(f.latitude),
              longitude: String(f.longitude),
              postal_code: f.postal_code,
            }
          : null,
      attribute_values: [],
      start_time: f.start_time,
      created_at: now,
      event: {
        price: f.price,
        is_active: f.is_active,
        discount_percent: f.discount_percent,
        end_time: new Date(f.start_time.getTime() + f.duration * 60_000),
        cover_picture: e.pictureName,
        question_id: e.question.id,
        created_by: e.createdBy,
        ...(e.requestHash === undefined ? {} : { request_hash: e.requestHash }),
      },
    };
    return this.items.insertOne({ ...item, ...outboxOnInsert(announce(item)) });
  }

  async deleteItem(id: string): Promise<void> {
    await this.items.deleteOne({ _id: id });
  }
}
