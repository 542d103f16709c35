/**
 * Builders of round documents, items and profiles for the unit tests. Everything is plain data; the
 * snapshot is built with the real `buildSnapshot`, as the rounds service does.
 */
import { buildSnapshot, type RoundSnapshot } from "../../../services/rounds/round-snapshot";
import { moscow } from "../../../shared/ops/fixtures";
import type { RoundDoc } from "../../../services/rounds/round-doc";
import type { GroupedAttributeValue, RoundLocation } from "../../../shared/contracts/round";
import type { ItemInfo } from "../../../shared/contracts/stores";
import type { UserProfile } from "../../../shared/contracts/users";

/** The fixed "now" of the tests; rounds end an hour later unless a test says otherwise. */
export const NOW = new Date("2030-01-01T12:00:00.000Z");
export const IN_AN_HOUR = new Date(NOW.getTime() + 3600_000);
export const AN_HOUR_AGO = new Date(NOW.getTime() - 3600_000);

/** The place of the test store event (store.event.created's location, as the form gave it). */
export const jazzClubPlace = {
  address: "Tverskaya 1",
  city: "Moscow",
  country: "Russia",
  postal_code: "125009",
  latitude: 55.7558,
  longitude: 37.6173,
};

export const colorGroup: GroupedAttributeValue = {
  id: 10,
  key_name: "color",
  name: "Color",
  type: "color",
  need_to_choose: true,
  choices: [
    { id: 101, value: "Black", value_hex: "#000000" },
    { id: 102, value: "White", value_hex: "#FFFFFF" },
  ],
};

export const engravingGroup: GroupedAttributeValue = {
  id: 20,
  key_name: "engraving",
  name: "Engraving",
  type: "text",
  need_to_choose: false,
  choices: [{ id: 201, value: "With engraving", value_hex: null }],
};

export const sizeGroup: GroupedAttributeValue = {
  id: 30,
  key_name: "size",
  name: "Size",
  type: "select",
  need_to_choose: true,
  choices: [
    { id: 301, value: "M" },
    { id: 302, value: "L" },
  ],
};

/** The seed's Moscow location: tests and demo data describe the same place. */
export const location: RoundLocation = moscow;

export function makeProfile(id: string, phone: string, overrides: Partial<UserProfile> = {}): UserProfile {
  return {
    id,
    phone,
    username: `${id}_name`,
    first_name: `${id} first`,
    last_name: `${id} last`,
    avatar_url: null,
    removed: false,
    ...overrides,
  };
}

export const OWNER = "owner";
export const ALICE = "alice";
export const BOB = "bob";
export const STRANGER = "stranger";

export const profiles: Record<string, UserProfile> = {
  [OWNER]: makeProfile(OWNER, "+79000000001", { avatar_url: "https://cdn.example/owner.png" }),
  [ALICE]: makeProfile(ALICE, "+79000000002"),
  [BOB]: makeProfile(BOB, "+79000000003"),
  [STRANGER]: makeProfile(STRANGER, "+79000000004"),
};

export function makeItem(overrides: Partial<ItemInfo> = {}): ItemInfo {
  return {
    id: "item-1",
    kind: "product",
    name: "Headphones",
    sku: "HP-1",
    platform_price: 1500,
    assets: [{ name: "front", path: "/img/hp.png", type: "image", sort_order: 0, is_primary: true }],
    duration: null,
    meeting_link: null,
    meeting_password: null,
    meeting_platform: null,
    event_type: null,
    short_desc: "Wireless",
    detail_desc: null,
    participants_limit: null,
    category: { id: 1, name: "Audio" },
    location: null,
    attribute_values: [colorGroup, engravingGroup],
    store: { id: 7, name: "Sound Shop", logo_url: null, is_blogger: false, currency: "RUB" },
    ...overrides,
  };
}

/** A public, active round of the owner with Alice as its only member (1 of 3 seats), ending in an hour. */
export function makeRoundDoc(overrides: Partial<RoundDoc> = {}): RoundDoc {
  return {
    _id: "round-1",
    uniq_id: "R-ABCDEF",
    owner_id: OWNER,
    item_id: "item-1",
    entry_fee: "150.00",
    currency: "RUB",
    variant: "standard",
    is_active: true,
    is_private: false,
    is_ended: false,
    is_event: false,
    start_time: AN_HOUR_AGO,
    end_time: IN_AN_HOUR,
    max_members_count: 3,
    members_count: 1,
    rev: 1,
    members: { [ALICE]: { status: "joined", joined_at: AN_HOUR_AGO, attributes: [101] } },
    favorites: { [ALICE]: true },
    question: { id: 1, theme: "Cinema", emoji: "🎬", category: "Entertainment" },
    certificate: { id: "cert-1", text: "10% off", discount_percent: 10 },
    locations: [location],
    created_at: AN_HOUR_AGO,
    ...overrides,
  };
}

/** The members map of a document whose members joined one minute apart, in the given order. */
export function membersOf(...ids: string[]): RoundDoc["members"] {
  return Object.fromEntries(
    ids.map((id, i) => [
      id,
      {
        status: "joined" as const,
        joined_at: new Date(AN_HOUR_AGO.getTime() + i * 60_000),
        attributes: [],
      },
    ]),
  );
}

export function makeSnapshot(
  overrides: Partial<RoundDoc> = {},
  withProfiles: Record<string, UserProfile> = profiles,
  item: ItemInfo = makeItem(),
): RoundSnapshot {
  return buildSnapshot(makeRoundDoc(overrides), withProfiles, item, Date.now());
}
