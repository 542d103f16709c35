/** The Round resource of the spec (§2.1–2.11): the response schema of GET /rounds/{id} and join. */
import { Type, type Static } from "@sinclair/typebox";
import { DateTime, Nullable } from "./common";

export const RoundOwner = Type.Object({
  id: Type.String(),
  first_name: Nullable(Type.String()),
  last_name: Nullable(Type.String()),
  avatar_url: Nullable(Type.String()),
});

export const ItemAsset = Type.Object({
  name: Type.String(),
  path: Type.String(),
  type: Type.String(),
  sort_order: Type.Integer(),
  is_primary: Type.Boolean(),
});

export const ProductCategory = Type.Object({ id: Type.Integer(), name: Type.String() });

export const ItemStore = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  logo_url: Type.Optional(Nullable(Type.String())),
  is_blogger: Type.Boolean(),
  seller_type: Type.String(),
});

export const ItemLocation = Type.Object({
  country: Type.Optional(Nullable(Type.String())),
  city: Type.Optional(Nullable(Type.String())),
  address: Type.String(),
  latitude: Type.String(),
  longitude: Type.String(),
  postal_code: Type.Optional(Nullable(Type.String())),
});

export const AttributeValueChoice = Type.Object({
  id: Type.Integer(),
  value: Type.String(),
  value_hex: Type.Optional(Nullable(Type.String())),
});

export const GroupedAttributeValue = Type.Object({
  id: Type.Integer(),
  key_name: Type.String(),
  name: Type.String(),
  type: Type.String(),
  need_to_choose: Type.Optional(Nullable(Type.Boolean())),
  choices: Type.Array(AttributeValueChoice),
});

export const RoundItem = Type.Object({
  id: Type.String(),
  name: Type.String(),
  sku: Type.Optional(Nullable(Type.String())),
  platform_price: Type.Number(),
  assets: Type.Optional(Nullable(Type.Array(ItemAsset))),
  duration: Type.Optional(Nullable(Type.Integer())),
  meeting_link: Type.Optional(Nullable(Type.String())),
  meeting_password: Type.Optional(Nullable(Type.String())),
  meeting_platform: Type.Optional(Nullable(Type.String())),
  event_type: Type.Optional(Nullable(Type.String())),
  short_desc: Type.Optional(Nullable(Type.String())),
  detail_desc: Type.Optional(Nullable(Type.String())),
  participants_limit: Type.Optional(Nullable(Type.Integer())),
  category: Type.Optional(Nullable(ProductCategory)),
  store: ItemStore,
  location: Type.Optional(Nullable(ItemLocation)),
  attribute_values: Type.Optional(Nullable(Type.Array(GroupedAttributeValue))),
  format_price: Type.String(),
});

export const ParticipantUser = Type.Object({
  id: Type.String(),
  phone: Type.String(),
  username: Type.String(),
  first_name: Nullable(Type.String()),
  last_name: Nullable(Type.String()),
  avatar_url: Nullable(Type.String()),
});

export const RoundParticipant = Type.Object({ status: Type.String(), user: ParticipantUser });

export const RoundQuestion = Type.Object({
  category_theme: Type.Object({
    name: Type.String(),
    emoji: Type.Optional(Nullable(Type.String())),
    category: Type.Object({ name: Type.String() }),
  }),
});

export const RoundCertificate = Type.Object({
  id: Type.String(),
  text: Type.String(),
  discount_percent: Type.Integer(),
});

export const RoundLocationCity = Type.Object({
  name: Type.String(),
  district: Type.Optional(Nullable(Type.String())),
  subject: Type.String(),
  timezone: Type.Optional(Nullable(Type.String())),
  lat: Type.Number(),
  lon: Type.Number(),
  country: Type.Object({
    code: Type.String(),
    name: Type.String(),
    phone_code: Type.String(),
    currency: Type.String(),
  }),
});

export const RoundLocation = Type.Object({
  city: RoundLocationCity,
  address: Type.String(),
  lat: Type.Number(),
  lon: Type.Number(),
  postal_code: Type.String(),
});

export const Round = Type.Object({
  id: Type.String(),
  uniq_id: Type.String(),
  status: Type.String(),
  entry_fee: Type.String(),
  is_active: Type.Boolean(),
  is_private: Type.Boolean(),
  is_ended: Type.Boolean(),
  is_event: Type.Boolean(),
  start_time: Type.Optional(Nullable(DateTime)),
  end_time: Type.Optional(Nullable(DateTime)),
  owner: RoundOwner,
  members_count: Type.Integer(),
  max_members_count: Type.Integer(),
  variant: Type.String(),
  item: RoundItem,
  participant_statuses: Type.Optional(Nullable(Type.Array(RoundParticipant))),
  in_favorites: Type.Optional(Nullable(Type.Boolean({ default: false }))),
  question: RoundQuestion,
  certificate: RoundCertificate,
  locations: Type.Optional(Nullable(Type.Array(RoundLocation))),
  seconds_to_end: Type.Integer(),
  format_entry_fee: Type.String(),
  format_status: Type.String(),
});

export type RoundOwner = Static<typeof RoundOwner>;
export type RoundItem = Static<typeof RoundItem>;
export type ItemStore = Static<typeof ItemStore>;
export type ItemAsset = Static<typeof ItemAsset>;
export type ItemLocation = Static<typeof ItemLocation>;
export type GroupedAttributeValue = Static<typeof GroupedAttributeValue>;
export type ProductCategory = Static<typeof ProductCategory>;
export type ParticipantUser = Static<typeof ParticipantUser>;
export type RoundParticipant = Static<typeof RoundParticipant>;
export type RoundQuestion = Static<typeof RoundQuestion>;
export type RoundCertificate = Static<typeof RoundCertificate>;
export type RoundLocation = Static<typeof RoundLocation>;
export type Round = Static<typeof Round>;
