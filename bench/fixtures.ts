/**
 * The data the HTTP scenarios need, created through the services' own actions (as shared/ops/seed.ts
 * does), so it works alike on an in-process embedded broker and on the distributed cluster's client node.
 */
import type { ServiceBroker } from "moleculer";
import { call } from "../shared/contracts";
import type { CreateRoundParams } from "../shared/contracts/rounds";
import { moscow, questions } from "../shared/ops/fixtures";

export interface BenchUser {
  id: string;
  access: string;
  refresh: string;
}

export interface FixtureSizes {
  spreadRounds: number;
  joiners: number;
  joinSeats: number;
  /** One fresh join round per measured round of scenario 3. */
  joinRounds: number;
  listUsers: number;
  friendsPerUser: number;
  paymentsPerUser: number;
}

export interface Fixtures {
  /** Reads rounds (scenarios 1 and 2); a member of none of them. */
  reader: BenchUser;
  hotRound: string;
  spreadRounds: string[];
  /** Scenario 3's users; their refresh tokens seed scenario 5's pool. */
  joiners: BenchUser[];
  joinRounds: string[];
  /** A one-seat round: two joins record a success and a refusal for the baseline to replay. */
  probeRound: string;
  /** Users with friends and payments (scenario 4). */
  listUsers: BenchUser[];
}

/** Demo tokens last 24 h (seed.ts); the bench's only need to outlive one run. */
export const ACCESS_TTL_SECONDS = 6 * 3600;

/** A store of `ownerId` selling one kettle without attributes: the item of every bench round. */
export async function kettleFor(broker: ServiceBroker, ownerId: string, label: string) {
  const slug = label.toLowerCase();
  const store = await call(broker, "stores.createStore", {
    name: `${label} Store`,
    is_blogger: false,
    logo_url: `https://cdn.example.com/logos/${slug}.png`,
    currency: "RUB",
    manager_ids: [ownerId],
  });
  return call(broker, "stores.createItem", {
    store_id: store.id,
    kind: "product",
    name: `${label} kettle`,
    sku: `${label[0]}K-1`,
    platform_price: 4990,
    assets: [
      { name: "main", path: `/media/${slug}/kettle.jpg`, type: "image", sort_order: 0, is_primary: true },
    ],
    short_desc: "A kettle to win",
    category: { id: 4, name: "Kitchen" },
    attribute_values: [],
  });
}

/** Runs fn over items with at most `limit` calls in flight (the cluster answers faster in parallel). */
export async function inParallel<T, R>(
  items: T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

async function createRound(broker: ServiceBroker, params: CreateRoundParams): Promise<string> {
  return (await call(broker, "rounds.create", params)).id;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

export async function createFixtures(broker: ServiceBroker, sizes: FixtureSizes): Promise<Fixtures> {
  let phone = 0;
  const user = async (name: string): Promise<BenchUser> => {
    const profile = await call(broker, "users.create", {
      phone: `+7911${String(++phone).padStart(7, "0")}`,
      username: name,
      first_name: name,
      last_name: "Bench",
      avatar_url: `https://avatars.example.com/${name}.png`,
    });
    const tokens = await call(broker, "auth.issueTokens", {
      user_id: profile.id,
      access_ttl_seconds: ACCESS_TTL_SECONDS,
    });
    return { id: profile.id, access: tokens.access_token, refresh: tokens.refresh_token };
  };

  const owner = await user("bench_owner");
  const reader = await user("bench_reader");
  const joiners = await inParallel(range(sizes.joiners), 16, (i) => user(`bench_joiner_${i}`));
  const listUsers = await inParallel(range(sizes.listUsers), 16, (i) => user(`bench_lists_${i}`));

  const item = await kettleFor(broker, owner.id, "Bench");

  const day = 86400_000;
  const round = (p: Partial<CreateRoundParams> & Pick<CreateRoundParams, "max_members_count">) =>
    createRound(broker, {
      owner_id: owner.id,
      item_id: item.id,
      entry_fee: "150.00",
      is_active: true,
      is_private: false,
      is_ended: false,
      is_event: false,
      start_time: new Date(Date.now() - day).toISOString(),
      end_time: new Date(Date.now() + 3 * day).toISOString(),
      question: questions[0],
      certificate: { text: "10% off any kettle", discount_percent: 10 },
      locations: [moscow],
      member_ids: [],
      favorite_of: [],
      ...p,
    });

  // A few members, so the hot round's answer carries participant profiles like a real one.
  const hotRound = await round({ max_members_count: 100, member_ids: joiners.slice(0, 5).map((u) => u.id) });
  const spreadRounds = await inParallel(range(sizes.spreadRounds), 32, () =>
    round({ max_members_count: 50 }),
  );
  const joinRounds = await inParallel(range(sizes.joinRounds), 4, () =>
    round({ max_members_count: sizes.joinSeats }),
  );
  const probeRound = await round({ max_members_count: 1 });

  // Per-user lists: friends among the joiners, and payments from joining paid rounds.
  const paidRounds = await inParallel(range(sizes.paymentsPerUser), 4, () =>
    round({ max_members_count: 1000 }),
  );
  await inParallel(listUsers, 8, async (u, i) => {
    for (let f = 0; f < sizes.friendsPerUser; f++) {
      const friend = joiners[(i * sizes.friendsPerUser + f) % joiners.length];
      await call(broker, "users.addFriends", { a: u.id, b: friend.id });
    }
    for (const roundId of paidRounds) {
      await call(
        broker,
        "rounds.join",
        { round_id: roundId, attributes: [] },
        { meta: { user: { id: u.id, token_id: "bench" } } },
      );
    }
  });
  // Payments are written by the users service on `round.member.joined`: wait until they all landed.
  const deadline = Date.now() + 30_000;
  for (const u of listUsers) {
    for (;;) {
      const payments = await call(
        broker,
        "users.payments",
        {},
        { meta: { user: { id: u.id, token_id: "bench" } } },
      );
      // A short list is answered as it is (a stream only past a page: shared/runtime/list-answer).
      if (Array.isArray(payments) && payments.length >= sizes.paymentsPerUser) break;
      if (Date.now() > deadline) throw new Error("bench fixtures: payments did not arrive");
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  return { reader, hotRound, spreadRounds, joiners, joinRounds, probeRound, listUsers };
}
