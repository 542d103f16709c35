/**
 * Loads the demo dataset through the services' own actions (each service writes its own collections)
 * and returns the manifest: ids, tokens and keys a person or a test needs to call the API.
 */
import type { ServiceBroker } from "moleculer";
import { call } from "../contracts";
import type { TokenSet } from "../contracts/auth";
import type { CreateRoundParams } from "../contracts/rounds";
import { demoPhone, headphoneAttributes, moscow, questions } from "./fixtures";

export interface ManifestUser {
  id: string;
  username: string;
  access_token: string;
  refresh_token: string;
}

export interface DemoManifest {
  generated_at: string;
  base_url: string | null;
  users: {
    alice: ManifestUser;
    bob: ManifestUser;
    carol: ManifestUser;
    removed: ManifestUser;
    crowd: ManifestUser[];
  };
  rounds: {
    open: string;
    full: string;
    ended: string;
    inactive: string;
    private: string;
    needs_attributes: { id: string; choice_ids: number[] };
    small: string;
    free: string;
    event: string;
  };
  stores: { alice_store: number; blogger_store: number };
  api_keys: { app: string; notifications: string };
}

/** Demo access tokens live a day, so the printed manifest stays usable for a while. */
export const DEMO_ACCESS_TTL_SECONDS = 24 * 3600;

const CROWD_SIZE = 30;

export class AlreadySeededError extends Error {
  constructor() {
    super("The store already holds the demo dataset; run `seed --reset` to start over.");
    this.name = "AlreadySeededError";
  }
}

export async function seed(broker: ServiceBroker, baseUrl: string | null = null): Promise<DemoManifest> {
  let phone = 0;
  const person = async (username: string, first: string | null, last: string | null) => {
    const profile = await call(broker, "users.create", {
      phone: demoPhone(++phone),
      username,
      first_name: first,
      last_name: last,
      avatar_url: `https://avatars.example.com/${username}.png`,
    }).catch((err: { code?: number }) => {
      if (err.code === 409) throw new AlreadySeededError();
      throw err;
    });
    const tokens: TokenSet = await call(broker, "auth.issueTokens", {
      user_id: profile.id,
      access_ttl_seconds: DEMO_ACCESS_TTL_SECONDS,
    });
    return {
      id: profile.id,
      username,
      access_token: tokens.access_token,
      refresh_token: tokens.refresh_token,
    };
  };

  const alice = await person("alice", "Alice", "Smirnova");
  const bob = await person("bob", "Bob", "Ivanov");
  const carol = await person("carol", "Carol", null);
  const removed = await person("removed_user", "Rem", "Oved");
  const crowd: ManifestUser[] = [];
  for (let i = 1; i <= CROWD_SIZE; i++) crowd.push(await person(`crowd_${i}`, `Crowd${i}`, "Member"));
  await call(broker, "users.remove", { id: removed.id });
  await call(broker, "users.addFriends", { a: alice.id, b: bob.id });

  const aliceStore = await call(broker, "stores.createStore", {
    name: "Alice's Gadgets",
    is_blogger: false,
    logo_url: "https://cdn.example.com/logos/alice-gadgets.png",
    currency: "RUB",
    manager_ids: [alice.id],
  });
  const bloggerStore = await call(broker, "stores.createStore", {
    name: "Bob Reviews",
    is_blogger: true,
    logo_url: null,
    currency: "RUB",
    manager_ids: [bob.id],
  });

  const headphones = await call(broker, "stores.createItem", {
    store_id: aliceStore.id,
    kind: "product",
    name: "Wireless headphones X2",
    sku: "X2-WH",
    platform_price: 12990,
    assets: [
      { name: "front", path: "/media/demo/x2-front.jpg", type: "image", sort_order: 0, is_primary: true },
      { name: "side", path: "/media/demo/x2-side.jpg", type: "image", sort_order: 1, is_primary: false },
    ],
    short_desc: "Noise-cancelling over-ear headphones",
    detail_desc: "40 hours of battery, USB-C, multipoint Bluetooth 5.3.",
    category: { id: 3, name: "Electronics" },
    location: {
      country: "Russia",
      city: "Moscow",
      address: moscow.address,
      latitude: "55.7601",
      longitude: "37.6143",
      postal_code: "125009",
    },
    attribute_values: headphoneAttributes,
  });
  const mug = await call(broker, "stores.createItem", {
    store_id: bloggerStore.id,
    kind: "product",
    name: "Signed mug",
    platform_price: 990,
    assets: [],
    attribute_values: [],
  });
  const grinder = await call(broker, "stores.createItem", {
    store_id: aliceStore.id,
    kind: "product",
    name: "Coffee grinder Pro",
    sku: "CG-PRO",
    platform_price: 7490,
    assets: [
      { name: "main", path: "/media/demo/grinder.jpg", type: "image", sort_order: 0, is_primary: true },
    ],
    short_desc: "Conical burr grinder",
    category: { id: 4, name: "Kitchen" },
    attribute_values: headphoneAttributes.filter((g) => !g.need_to_choose),
  });
  const jazz = await call(broker, "stores.createItem", {
    store_id: aliceStore.id,
    kind: "event",
    name: "Jazz evening",
    platform_price: 2500,
    assets: [],
    duration: 120,
    event_type: "offline",
    participants_limit: 40,
    meeting_link: null,
    short_desc: "Live jazz quartet",
    attribute_values: [],
    start_time: new Date(Date.now() + 7 * 86400_000).toISOString(),
  });

  const inDays = (d: number) => new Date(Date.now() + d * 86400_000).toISOString();
  const round = async (
    p: Partial<CreateRoundParams> & Pick<CreateRoundParams, "item_id" | "max_members_count">,
  ) =>
    (
      await call(broker, "rounds.create", {
        owner_id: alice.id,
        entry_fee: "150.00",
        is_active: true,
        is_private: false,
        is_ended: false,
        is_event: false,
        start_time: inDays(-1),
        end_time: inDays(3),
        question: questions[0],
        certificate: { text: "10% off any order in Alice's Gadgets", discount_percent: 10 },
        locations: [moscow],
        member_ids: [],
        favorite_of: [],
        ...p,
      })
    ).id;

  const rounds: DemoManifest["rounds"] = {
    open: await round({
      item_id: grinder.id,
      max_members_count: 100,
      member_ids: [bob.id],
      favorite_of: [bob.id],
    }),
    full: await round({
      item_id: mug.id,
      owner_id: bob.id,
      max_members_count: 3,
      member_ids: crowd.slice(0, 3).map((u) => u.id),
    }),
    ended: await round({
      item_id: mug.id,
      max_members_count: 10,
      is_ended: true,
      start_time: inDays(-10),
      end_time: inDays(-3),
    }),
    inactive: await round({ item_id: mug.id, max_members_count: 10, is_active: false }),
    private: await round({
      item_id: mug.id,
      max_members_count: 10,
      is_private: true,
      question: questions[1],
    }),
    needs_attributes: {
      id: await round({ item_id: headphones.id, max_members_count: 50 }),
      choice_ids: [101, 102, 103],
    },
    small: await round({ item_id: mug.id, max_members_count: 5, entry_fee: "50", question: questions[2] }),
    free: await round({ item_id: mug.id, max_members_count: 20, entry_fee: "0", end_time: null }),
    event: await round({
      item_id: jazz.id,
      max_members_count: 40,
      is_event: true,
      entry_fee: "2500",
      certificate: { text: "15% off the next concert", discount_percent: 15 },
    }),
  };

  // Bob joins the paid event round the way a client does, so his payments list is not empty.
  await call(
    broker,
    "rounds.join",
    { round_id: rounds.event, attributes: [] },
    { meta: { user: { id: bob.id, token_id: "seed" } } },
  );

  // Demo devices (registration tokens are opaque to us; these only ever reach the log transport or a fake).
  for (const [i, u] of [alice, bob, carol, ...crowd].entries()) {
    await call(broker, "users.addDevice", { user_id: u.id, token: `demo-device-${u.username}-a` });
    if (i % 3 === 0)
      await call(broker, "users.addDevice", { user_id: u.id, token: `demo-device-${u.username}-b` });
  }

  await call(broker, "settings.setVersions", {
    platform: "android",
    current_version: "2.4.0",
    min_version: "2.0.0",
  });
  await call(broker, "settings.setVersions", {
    platform: "ios",
    current_version: "2.4.1",
    min_version: "2.1.0",
  });
  await call(broker, "settings.setVersions", {
    platform: "ru_store",
    current_version: "2.3.0",
    min_version: "2.0.0",
  });
  const appKey = await call(broker, "auth.createApiKey", { scope: "app", label: "demo app" });
  const notificationsKey = await call(broker, "auth.createApiKey", {
    scope: "notifications",
    label: "demo notifications",
  });

  return {
    generated_at: new Date().toISOString(),
    base_url: baseUrl,
    users: { alice, bob, carol, removed, crowd },
    rounds,
    stores: { alice_store: aliceStore.id, blogger_store: bloggerStore.id },
    api_keys: { app: appKey.key, notifications: notificationsKey.key },
  };
}
