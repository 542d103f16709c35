/** Contracts of the stores service: stores and their items (products and event items). */
import { Type, type Static } from "@sinclair/typebox";
import { DateTime, Id, Nullable } from "./common";
import { GroupedAttributeValue, ItemAsset, ItemLocation, ProductCategory } from "./round";

/** A store as other services see it (without computed fields). */
export const StoreInfo = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  logo_url: Nullable(Type.String()),
  is_blogger: Type.Boolean(),
  currency: Type.String(),
});
export type StoreInfo = Static<typeof StoreInfo>;

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
  store: StoreInfo,
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
