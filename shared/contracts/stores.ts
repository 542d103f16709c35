/** Contracts of the stores service: stores and their items (products and event items). */
import { Type, type Static } from "@sinclair/typebox";
import { DateTime, Id, Nullable } from "./common";
import { GroupedAttributeValue, ItemAsset, ItemLocation, ProductCategory } from "./round";

/**
 * The longest a store-event upload may take, headers in to answer out: the gateway cuts it there
 * (services/gateway/http-bounds.ts) and the stores service keeps its key and staged files at least
 * that long. Two minutes carry the largest picture (PICTURE_MAX_BYTES, 10 MB) at some 700 kbit/s, a
 * poor mobile uplink, while a stalled one frees its slot within minutes.
 */
export const UPLOAD_TIMEOUT_MS = 120_000;

/** A store as other services see it (without computed fields). */
export const StoreInfo = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  logo_url: Nullable(Type.String()),
  is_blogger: Type.Boolean(),
  currency: Type.String(),
});
export type StoreInfo = Static<typeof StoreInfo>;

/**
 * An item's store as the rounds service embeds it: with its managers, who see an event round's meeting
 * link and password (docs/decisions/0019). Optional: an item cached by a stores process of before names
 * none.
 */
export const ItemStoreInfo = Type.Composite([
  StoreInfo,
  Type.Object({ manager_ids: Type.Optional(Type.Array(Id)) }),
]);
export type ItemStoreInfo = Static<typeof ItemStoreInfo>;

/** An item with its store, as the rounds service embeds it (computed fields are added on the way out). */
export const ItemInfo = Type.Object({
  id: Type.String(),
  kind: Type.Union([Type.Literal("product"), Type.Literal("event")]),
  name: Type.String(),
  sku: Nullable(Type.String()),
  platform_price: Type.Number(),
  assets: Type.Array(ItemAsset),
  duration: Nullable(Type.Integer()),
  meeting_link: Nullable(Type.String()),
  meeting_password: Nullable(Type.String()),
  meeting_platform: Nullable(Type.String()),
  event_type: Nullable(Type.String()),
  short_desc: Nullable(Type.String()),
  detail_desc: Nullable(Type.String()),
  participants_limit: Nullable(Type.Integer()),
  category: Nullable(ProductCategory),
  location: Nullable(ItemLocation),
  attribute_values: Type.Array(GroupedAttributeValue),
  store: ItemStoreInfo,
});
export type ItemInfo = Static<typeof ItemInfo>;

export const GetItemParams = Type.Object({ id: Id });
export type GetItemParams = Static<typeof GetItemParams>;

export const CreateStoreParams = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  is_blogger: Type.Boolean({ default: false }),
  logo_url: Type.Optional(Nullable(Type.String())),
  currency: Type.Optional(Type.String({ pattern: "^[A-Z]{3}$" })),
  manager_ids: Type.Array(Id, { default: [] }),
});
export type CreateStoreParams = Static<typeof CreateStoreParams>;

export const CreateItemParams = Type.Object({
  store_id: Type.Integer(),
  kind: Type.Union([Type.Literal("product"), Type.Literal("event")], { default: "product" }),
  name: Type.String({ minLength: 1, maxLength: 200 }),
  sku: Type.Optional(Nullable(Type.String())),
  platform_price: Type.Number({ minimum: 0 }),
  assets: Type.Array(ItemAsset, { default: [] }),
  duration: Type.Optional(Nullable(Type.Integer())),
  meeting_link: Type.Optional(Nullable(Type.String())),
  meeting_password: Type.Optional(Nullable(Type.String())),
  meeting_platform: Type.Optional(Nullable(Type.String())),
  event_type: Type.Optional(Nullable(Type.String())),
  short_desc: Type.Optional(Nullable(Type.String())),
  detail_desc: Type.Optional(Nullable(Type.String())),
  participants_limit: Type.Optional(Nullable(Type.Integer())),
  category: Type.Optional(Nullable(ProductCategory)),
  location: Type.Optional(Nullable(ItemLocation)),
  attribute_values: Type.Array(GroupedAttributeValue, { default: [] }),
  start_time: Type.Optional(Nullable(DateTime)),
});
export type CreateItemParams = Static<typeof CreateItemParams>;

export const StoreIdParam = Type.String({ minLength: 1, maxLength: 20 });

/**
 * The `Idempotency-Key` header of POST /stores/{store_id}/events: bounded as the multicast's
 * (docs/decisions/0023-store-event-form.md).
 */
export const EventIdempotencyKey = Type.String({
  minLength: 1,
  maxLength: 200,
  description:
    "Makes a retry safe: the same user sending the same key with the same form (text fields and picture bytes) " +
    "gets the first answer back (header Idempotent-Replayed: true) and no second event or round; with a " +
    "different form, 422; while the first request is still running, 409 with Retry-After. A key is " +
    "remembered for 24 h from its first use; a request that created nothing " +
    "leaves nothing to replay.",
});

/** Set ("true") on an answer an earlier request with the same Idempotency-Key made (decision 0023). */
export const REPLAYED_HEADER = "Idempotent-Replayed";

/** Drawn by the gateway for one request: whose hold on an Idempotency-Key this is. */
export const KeyLease = Type.String({ minLength: 1, maxLength: 64 });

/**
 * Called before the body is read. With an Idempotency-Key it also takes the key for this request
 * (`lease`, drawn by the gateway, so a repeated call takes it again instead of finding it busy).
 */
export const EventPermissionParams = Type.Object({
  store_id: StoreIdParam,
  user_id: Id,
  idempotency_key: Type.Optional(EventIdempotencyKey),
  lease: Type.Optional(KeyLease),
});
export type EventPermissionParams = Static<typeof EventPermissionParams>;

/** Gives an Idempotency-Key back once its request is over (a no-op when another request holds it now). */
export const ReleaseEventKeyParams = Type.Object({
  user_id: Id,
  idempotency_key: EventIdempotencyKey,
  lease: KeyLease,
});
export type ReleaseEventKeyParams = Static<typeof ReleaseEventKeyParams>;

/** `stageBegin`: `sha256` asks for the picture's SHA-256, computed as it is written (requests with a key). */
export const StageBeginParams = Type.Object({ sha256: Type.Optional(Type.Boolean()) });
export type StageBeginParams = Static<typeof StageBeginParams>;

/** A picture written to blob storage but not yet part of anything (deleted unless an event takes it). */
export interface StagedPicture {
  staged_id: string;
  size: number;
  /** Sniffed from the bytes; null when they are not a JPEG, PNG or WebP image. */
  mime: "image/jpeg" | "image/png" | "image/webp" | null;
  /** Hex SHA-256 of the bytes, when `stageBegin` asked for it. */
  sha256?: string;
}

/** What the gateway hands over after reading the multipart body: raw text fields and the staged file. */
export const CreateEventParams = Type.Object({
  store_id: StoreIdParam,
  fields: Type.Record(Type.String(), Type.String()),
  picture: Nullable(
    Type.Object({
      staged_id: Type.String(),
      size: Type.Integer(),
      mime: Nullable(Type.String()),
      sha256: Type.Optional(Type.String({ pattern: "^[0-9a-f]{64}$" })),
    }),
  ),
  /** The request's Idempotency-Key and the gateway's hold on it (taken by `checkEventPermission`). */
  idempotency: Type.Optional(Type.Object({ key: EventIdempotencyKey, lease: KeyLease })),
});
export type CreateEventParams = Static<typeof CreateEventParams>;

/** §2.12, the response of POST /stores/{store_id}/events (plus `round_id`, see docs/decisions/0023). */
export const StoreEvent = Type.Object({
  id: Type.String(),
  name: Type.String(),
  price: Type.Number(),
  start_time: DateTime,
  end_time: DateTime,
  duration: Type.Integer(),
  event_type: Type.String(),
  participants_limit: Type.Integer(),
  is_active: Type.Boolean(),
  store: Type.Object({
    id: Type.Integer(),
    name: Type.String(),
    is_blogger: Type.Boolean(),
    seller_type: Type.String(),
    logo_url: Nullable(Type.String()),
  }),
  short_desc: Nullable(Type.String()),
  detail_desc: Nullable(Type.String()),
  format_price: Type.String(),
  platform_price: Type.Number(),
  meeting_link: Nullable(Type.String()),
  meeting_password: Nullable(Type.String()),
  meeting_platform: Nullable(Type.String()),
  cover_picture_url: Type.String(),
  question_id: Type.Integer(),
  location: Nullable(
    Type.Object({ address: Type.String(), country: Nullable(Type.String()), city: Nullable(Type.String()) }),
  ),
  round_id: Type.String(),
});
export type StoreEvent = Static<typeof StoreEvent>;

export const MediaParams = Type.Object({
  name: Type.String({ pattern: "^[A-Za-z0-9-]{1,64}\\.(jpg|png|webp)$" }),
});
export type MediaParams = Static<typeof MediaParams>;

/** Event `store.event.created`: the rounds service opens the event's round from it. */
export const StoreEventCreatedEvent = Type.Object({
  event_id: Type.String(),
  round_id: Type.String(),
  store_id: Type.Integer(),
  owner_id: Type.String(),
  price: Type.Number(),
  currency: Type.String(),
  start_time: DateTime,
  end_time: DateTime,
  participants_limit: Type.Integer(),
  discount_percent: Type.Number(),
  question_id: Type.Integer(),
  is_active: Type.Boolean(),
  store_name: Type.String(),
  location: Nullable(
    Type.Object({
      address: Type.String(),
      city: Nullable(Type.String()),
      country: Nullable(Type.String()),
      postal_code: Nullable(Type.String()),
      latitude: Type.Number(),
      longitude: Type.Number(),
    }),
  ),
});
export type StoreEventCreatedEvent = Static<typeof StoreEventCreatedEvent>;

/**
 * The multipart form of POST /stores/{store_id}/events as documented (§4.4): every field is text on the
 * wire; the stores service coerces and checks them (services/stores/event-form.ts).
 */
export const StoreEventForm = Type.Object({
  name: Type.String({ maxLength: 200 }),
  price: Type.String({ description: "Number ≥ 0" }),
  event_type: Type.String({ enum: ["online", "offline"] }),
  is_active: Type.Optional(Type.String({ description: "true, false, 1 or 0 (default true)" })),
  discount_percent: Type.Optional(Type.String({ description: "Number 0–100 (default 0)" })),
  duration: Type.String({ description: "Whole minutes > 0" }),
  participants_limit: Type.String({ description: "Integer ≥ 1" }),
  short_desc: Type.Optional(Type.String({ maxLength: 500 })),
  detail_desc: Type.Optional(Type.String({ maxLength: 5000 })),
  start_time: Type.String({
    format: "date-time",
    description: "ISO 8601 with a time-zone offset, in the future",
  }),
  city: Type.Optional(Type.String({ description: "Required for offline events" })),
  address: Type.Optional(Type.String({ description: "Required for offline events" })),
  postal_code: Type.Optional(Type.String()),
  country: Type.Optional(Type.String()),
  latitude: Type.Optional(Type.String({ description: "−90..90; required for offline events" })),
  longitude: Type.Optional(Type.String({ description: "−180..180; required for offline events" })),
  meeting_link: Type.Optional(Type.String({ format: "uri", description: "http(s) only" })),
  meeting_password: Type.Optional(Type.String()),
  meeting_platform: Type.Optional(Type.String()),
  main_picture: Type.String({ format: "binary", description: "JPEG, PNG or WebP, by content" }),
});
