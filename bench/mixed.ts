/**
 * Cases 8 and 9: a mixed workload shaped like a real app, over a data set of many users (100,000 in a
 * full run) and rounds (10,000), 256 connections. Each request is one of:
 * - 80% GET /rounds/{id}, the round drawn Zipf-like (a few hot, a long tail);
 * - 4% GET /users/friends and 4% GET /users/payments;
 * - 5% POST /rounds/{id}/join (Zipf-like too, so hot rounds fill up: their 409s are the spec's answer);
 * - 5% POST /auth/refresh-token, rotating: each user's next refresh presents the token of its last one;
 * - 2% GET /app-settings with the app's API key.
 * The two cases differ in their callers. Case 8, sessions: each caller reuses its token for a session
 * of requests (bench/sessions.ts), as a mobile client does. Case 9, every request a new caller: the user
 * of each request is drawn uniformly from all of them, so the cost of a first verification stays
 * visible. Both draw their users uniformly. Latency is kept per route.
 *
 * The data is created through the services' own actions (users.create and auth.issueTokens per user,
 * pipelined 256 at a time; rounds.create; users.addFriends), as every other case's. Both cases run on
 * one seeded system, case 8 first; the seats their joins took are checked over both.
 */
import type { ServiceBroker } from "moleculer";
import { alternate, type ReferenceRun, type ScenarioOutcome } from "./ab";
import { record, startBaseline, type Baseline } from "./baseline";
import { call } from "../shared/contracts";
import { moscow, questions } from "../shared/ops/fixtures";
import { ACCESS_TTL_SECONDS, inParallel, kettleFor, type BenchUser } from "./fixtures";
import type { Row } from "./lib";
import { load, type LoadResult } from "./load";
import { bearer, type Scenario } from "./scenarios/scenario";
import { paymentProblems, SeatLedger, seatedByJoin, seatVerdict } from "./seats";
import { startCluster } from "../test/support/cluster";
import { cpuMeter, untilQuiet, type Watched } from "./cpu";
import { distributedNodeArgs, nodeArgsOf, type NodeOptions } from "./node-options";
import { benchStore, clusterWatched, mongoCredentials, startEmbedded } from "./systems";
import { zipf } from "./zipf";
import { SESSION_MEAN_REQUESTS, Sessions } from "./sessions";
import { BENCH_LIMITS } from "./limits";

export interface MixedSizes {
  users: number;
  rounds: number;
}

export interface MixedFixtures {
  users: BenchUser[];
  rounds: string[];
  /** The users each round was created with, by round (the seat check starts from them). */
  members: string[][];
  appKey: string;
  /** How long creating the data took, by part (seconds), and how many calls were tried again. */
  seeding: {
    users: number;
    friends: number;
    rounds: number;
    tokens: number;
    total: number;
    repeated: number;
  };
}

/** Share of each route in the mix (sums to 1). */
export const MIX = {
  round: 0.8,
  friends: 0.04,
  payments: 0.04,
  join: 0.05,
  refresh: 0.05,
  settings: 0.02,
} as const;
export type Route = keyof typeof MIX;
/** Shares of the routes; those left out are not drawn. */
export type Mix = Record<Route, number>;

/**
 * A mix from `route=weight,…` (e.g. `round=80,join=5`): the routes named, in proportion to their
 * weights; any other route is not drawn. For taking case 8 apart, one kind of request at a time.
 */
export function parseMix(text: string): Mix {
  const mix: Mix = { round: 0, friends: 0, payments: 0, join: 0, refresh: 0, settings: 0 };
  for (const part of text.split(",").filter(Boolean)) {
    const [route, weight] = part.split("=");
    if (!(route in mix) || !(Number(weight) > 0)) {
      throw new Error(`--mix takes route=weight pairs of ${Object.keys(mix).join(", ")}, not "${part}"`);
    }
    mix[route as Route] = Number(weight);
  }
  const sum = Object.values(mix).reduce((a, b) => a + b, 0);
  if (sum === 0) throw new Error("--mix names no route");
  for (const route of Object.keys(mix) as Route[]) mix[route] /= sum;
  return mix;
}

const describeMix = (mix: Mix): string =>
  mix === MIX
    ? "80% reads, 8% lists, 5% joins, 5% refreshes, 2% settings"
    : (Object.entries(mix) as [Route, number][])
        .filter(([, share]) => share > 0)
        .map(([route, share]) => `${Math.round(share * 1000) / 10}% ${route}`)
        .join(", ");

const ROUTE_TITLES: Record<Route, string> = {
  round: "GET /rounds/{id}",
  friends: "GET /users/friends",
  payments: "GET /users/payments",
  join: "POST /rounds/{id}/join",
  refresh: "POST /auth/refresh-token",
  settings: "GET /app-settings",
};

export const CONNECTIONS = 256;
/** Seats per round: hot rounds fill up during a run. */
const SEATS = 50;
/**
 * One user in ten (at most 5,000) has friends (a ring: four each); the others' lists are empty, as a
 * new user's. Payments come from the joins of the run.
 */
const friendUsers = (users: number) => Math.min(5_000, Math.ceil(users / 10));

/** Tries of a call whose repeat is harmless, and the wait before the next (times the try). */
const TRIES = 4;
const REPEAT_AFTER_MS = 1_000;

/**
 * Runs a call whose repeat does no harm (a friendship added twice is one; a second token set for a user
 * is a sign-in never used) again when it failed for a reason Moleculer marks retryable: its callee's
 * node dropped for silence, a timeout. On a busy two-core machine a million-user seeding met that now
 * and then (docs/performance.md, Scaling), and one such call ended the whole run.
 */
export async function repeatable<R>(
  fn: () => Promise<R>,
  repeated: () => void,
  waitMs = REPEAT_AFTER_MS,
): Promise<R> {
  for (let tries = 1; ; tries++) {
    try {
      return await fn();
    } catch (err) {
      if (tries >= TRIES || (err as { retryable?: boolean })?.retryable !== true) throw err;
      repeated();
      await new Promise((resolve) => setTimeout(resolve, waitMs * tries));
    }
  }
}

const SETTINGS_QUERY = "?version=2.1.0&platform=android";

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const secondsSince = (t0: number) => Math.round((Date.now() - t0) / 100) / 10;

/**
 * The order matters: creating a user (and adding a friendship) cleans wildcard patterns of the cache
 * (`users.profiles:**`), which on Redis scans every key, and issuing a token caches the user's status,
 * one key per user. Interleaved, each creation scanned all the keys of the users before it, slower and
 * slower (docs/performance.md, case 8). So every user and friendship is
 * created first, the rounds next, and the tokens last, each part with many calls in flight.
 */
export async function seedMixed(
  broker: ServiceBroker,
  sizes: MixedSizes,
  log: (line: string) => void = () => undefined,
): Promise<MixedFixtures> {
  const t0 = Date.now();
  const step = Math.max(1, Math.round(sizes.users / 5));
  const progress = (what: string, since: number) => {
    let done = 0;
    return () => {
      if (++done % step === 0)
        log(`  8: ${done.toLocaleString("en")} ${what} after ${secondsSince(since)} s`);
    };
  };
  let repeated = 0;
  const countRepeat = () => void repeated++;
  const created = progress("users", t0);
  const ids = await inParallel(range(sizes.users), 256, async (i) => {
    const profile = await call(broker, "users.create", {
      phone: `+7933${String(i).padStart(7, "0")}`,
      username: `mixed_${i}`,
      first_name: `User${i}`,
      last_name: "Mixed",
      avatar_url: `https://avatars.example.com/mixed_${i}.png`,
    });
    created();
    return profile.id;
  });
  const usersSeconds = secondsSince(t0);

  const t1 = Date.now();
  const ring = ids.slice(0, friendUsers(ids.length));
  if (ring.length > 2) {
    await inParallel(range(ring.length * 2), 64, (k) => {
      const i = k >> 1;
      const j = (i + 1 + (k & 1)) % ring.length;
      return repeatable(() => call(broker, "users.addFriends", { a: ring[i], b: ring[j] }), countRepeat);
    });
  }
  const friendsSeconds = secondsSince(t1);

  const t2 = Date.now();
  const owner = ids[0];
  const item = await kettleFor(broker, owner, "Mixed");
  const day = 86400_000;
  const someone = () => ids[Math.floor(Math.random() * ids.length)];
  const members = range(sizes.rounds).map(() => [...new Set([someone(), someone(), someone()])]);
  const rounds = await inParallel(
    range(sizes.rounds),
    64,
    async (i) =>
      (
        await call(broker, "rounds.create", {
          owner_id: owner,
          item_id: item.id,
          max_members_count: SEATS,
          entry_fee: "150.00",
          is_active: true,
          is_private: false,
          is_ended: false,
          is_event: false,
          start_time: new Date(Date.now() - day).toISOString(),
          end_time: new Date(Date.now() + 3 * day).toISOString(),
          question: questions[i % questions.length],
          certificate: { text: "10% off any kettle", discount_percent: 10 },
          locations: [moscow],
          // A few members already, so an answer carries participant profiles like a real one.
          member_ids: members[i],
          favorite_of: [],
        })
      ).id,
  );
  const roundsSeconds = secondsSince(t2);

  const t3 = Date.now();
  const issued = progress("token sets", t3);
  const users = await inParallel(ids, 256, async (id): Promise<BenchUser> => {
    const tokens = await repeatable(
      () => call(broker, "auth.issueTokens", { user_id: id, access_ttl_seconds: ACCESS_TTL_SECONDS }),
      countRepeat,
    );
    issued();
    return { id, access: tokens.access_token, refresh: tokens.refresh_token };
  });
  const tokensSeconds = secondsSince(t3);

  await call(broker, "settings.setVersions", {
    platform: "android",
    current_version: "2.4.0",
    min_version: "2.0.0",
  });
  const appKey = (await call(broker, "auth.createApiKey", { scope: "app", label: "bench mixed" })).key;
  return {
    users,
    rounds,
    members,
    appKey,
    seeding: {
      users: usersSeconds,
      friends: friendsSeconds,
      rounds: roundsSeconds,
      tokens: tokensSeconds,
      total: secondsSince(t0),
      repeated,
    },
  };
}

/** What autocannon passes through from setupRequest to onResponse of the same request. */
interface MixContext {
  route?: Route;
  user?: number;
  /** A join's round, by index. */
  round?: number;
}

interface RouteStats {
  latencies: number[];
  statuses: Record<string, number>;
}

export interface RouteSummary {
  route: Route;
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  statuses: Record<string, number>;
}

/** Statuses that are a normal answer of a route; joins into a full round are refused with a 409. */
const expectedOf = (route: Route): number[] => (route === "join" ? [200, 409] : [200]);

export const percentile = (sorted: number[], p: number): number =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

/** Draws a route with the mix's shares. */
export function routePicker(random: () => number = Math.random, mix: Mix = MIX): () => Route {
  const entries = (Object.entries(mix) as [Route, number][]).filter(([, share]) => share > 0);
  return () => {
    let x = random();
    for (const [route, share] of entries) {
      if (x < share) return route;
      x -= share;
    }
    return entries[0][0];
  };
}

export type MixedResult = LoadResult & { routes: RouteSummary[] };

/** Case 8's callers keep their token for a session; case 9's are drawn anew for every request. */
export type MixedCase = "8" | "9";
export const MIXED_CASES: MixedCase[] = ["8", "9"];

/** What the joins into each round reached, by round index, over every run against one system. */
export type SeatBook = Map<number, SeatLedger>;

export interface MixedOptions {
  connections?: number;
  mix?: Mix;
  /** "8" (sessions, the default) or "9" (every request a new caller). */
  key?: MixedCase;
  /** Shared by the cases run on one system, so that the seat check counts every join into a round. */
  seats?: SeatBook;
}

/** A run of the mix; `wholeRun` makes a reference run as long as the system's (else at most 10 s). */
type MixedRun = Parameters<Scenario["measure"]>[0] & { wholeRun?: boolean };

/**
 * The users with a refresh in flight, by data set, shared by every scenario run on it (cases 8 and 9): a
 * refresh still unanswered when a run stopped may have rotated the user's refresh token on the server,
 * so that user never refreshes again (presenting the old token would be refused as reused).
 */
const inFlightRefreshes = new WeakMap<MixedFixtures, Set<number>>();
function refreshingOf(f: MixedFixtures): Set<number> {
  let users = inFlightRefreshes.get(f);
  if (!users) inFlightRefreshes.set(f, (users = new Set()));
  return users;
}

export function mixedScenario(
  f: MixedFixtures,
  opts: MixedOptions = {},
): Scenario & {
  measure(run: MixedRun): Promise<MixedResult>;
  /** Checks the seats of every round a join reached (bench/seats.ts); throws when one is wrong. */
  verify(systemUrl: string): Promise<string>;
} {
  const { connections = CONNECTIONS, mix = MIX, key = "8", seats: ledgers = new Map() } = opts;
  const sessions = key === "8";
  const pickRound = zipf(f.rounds.length);
  const pickRoute = routePicker(Math.random, mix);
  const anyUser = () => Math.floor(Math.random() * f.users.length);
  // Sessions begun and requests sent in the system's runs, for the note.
  let begun = 0;
  let sent = 0;
  // A user refreshes once at a time, as a client does: the next refresh presents the last answer's token.
  const refreshing = refreshingOf(f);
  const idleUser = () => {
    for (let tries = 0; tries < 8; tries++) {
      const u = anyUser();
      if (!refreshing.has(u)) return u;
    }
    return null;
  };
  const joinBody = JSON.stringify({ attributes: [] });
  // Over every run against the system, what the joins into each round reached did (verify checks it).
  const ledgerOf = (r: number) => {
    let l = ledgers.get(r);
    if (!l) ledgers.set(r, (l = new SeatLedger(f.members[r])));
    return l;
  };
  const callers = sessions
    ? `sessions of ${SESSION_MEAN_REQUESTS} requests on average (geometric), ${connections} open`
    : "every request a new caller";
  return {
    key,
    title:
      `mixed, ${callers}: ${f.users.length.toLocaleString("en")} users, ` +
      `${f.rounds.length.toLocaleString("en")} rounds (${describeMix(mix)})`,
    connections,
    // The baseline answers the most common request's bytes (a round read) to the same mix of requests.
    record: async (url) => [
      await record(`${url}/rounds/${f.rounds[0]}`, { headers: bearer(f.users[1].access) }),
    ],
    async measure({ url, side, seconds, wholeRun }: MixedRun) {
      const system = side === "system";
      // One session open per connection, each a user drawn uniformly, begun anew when it ends.
      const open = sessions ? new Sessions(connections, anyUser) : null;
      const stats = new Map<Route, RouteStats>();
      const statsOf = (r: Route) => {
        let s = stats.get(r);
        if (!s) stats.set(r, (s = { latencies: [], statuses: {} }));
        return s;
      };
      let last: Route = "round";
      const empty = Buffer.alloc(0);
      // The bare baseline serves the recorded bytes only: a shorter run gives its rate.
      const runSeconds = system || wholeRun ? seconds : Math.min(seconds, 10);
      const result = await load({
        url,
        connections,
        seconds: runSeconds,
        // Counted per route below; a join's 409 is expected there, and only there.
        expected: [200, 409],
        observe: (status, ms) => {
          const s = statsOf(last);
          s.latencies.push(ms);
          s.statuses[status] = (s.statuses[status] ?? 0) + 1;
        },
        requests: [
          {
            setupRequest: (req, ctx) => {
              const context = ctx as MixContext;
              let route = pickRoute();
              let u = open ? open.next() : anyUser();
              if (route === "refresh" && open) {
                // A session's refresh waits for its last one; its other requests keep the token it has.
                if (refreshing.has(u)) route = "round";
                else if (system) refreshing.add(u);
              } else if (route === "refresh") {
                const idle = idleUser();
                if (idle === null) route = "round";
                else {
                  u = idle;
                  if (system) refreshing.add(u);
                }
              }
              context.route = route;
              context.user = u;
              const user = f.users[u];
              const auth = bearer(user.access);
              switch (route) {
                case "round":
                  return {
                    ...req,
                    method: "GET",
                    path: `/rounds/${f.rounds[pickRound()]}`,
                    headers: auth,
                    body: empty,
                  };
                case "friends":
                case "payments":
                  return { ...req, method: "GET", path: `/users/${route}`, headers: auth, body: empty };
                case "join":
                  context.round = pickRound();
                  if (system) ledgerOf(context.round).sent();
                  return {
                    ...req,
                    method: "POST",
                    path: `/rounds/${f.rounds[context.round]}/join`,
                    headers: { ...auth, "content-type": "application/json" },
                    body: joinBody,
                  };
                case "refresh":
                  return {
                    ...req,
                    method: "POST",
                    path: "/auth/refresh-token",
                    headers: { ...auth, "content-type": "application/json" },
                    body: JSON.stringify({ refresh_token: user.refresh }),
                  };
                case "settings":
                  return {
                    ...req,
                    method: "GET",
                    path: `/app-settings${SETTINGS_QUERY}`,
                    headers: { "x-api-key": f.appKey },
                    body: empty,
                  };
              }
            },
            onResponse: (status, body, ctx) => {
              const context = ctx as MixContext;
              last = context.route as Route;
              if (!system) return;
              const u = context.user as number;
              if (last === "join") ledgerOf(context.round as number).answered(f.users[u].id, status);
              if (last !== "refresh") return;
              refreshing.delete(u);
              if (status !== 200) return;
              const set = JSON.parse(body) as { access_token: string; refresh_token: string };
              f.users[u] = { ...f.users[u], access: set.access_token, refresh: set.refresh_token };
            },
          },
        ],
      });
      const routes: RouteSummary[] = (Object.keys(MIX) as Route[]).map((route) => {
        const s = statsOf(route);
        const sorted = s.latencies.sort((a, b) => a - b);
        const expected = system ? expectedOf(route) : [200];
        return {
          route,
          requests: sorted.length,
          rps: sorted.length / result.seconds,
          p50: percentile(sorted, 50),
          p99: percentile(sorted, 99),
          errors: Object.entries(s.statuses)
            .filter(([code]) => !expected.includes(Number(code)))
            .reduce((a, [, n]) => a + n, 0),
          statuses: s.statuses,
        };
      });
      // Any unexpected answer of any route counts (a 409 other than a join's too), plus what autocannon
      // saw as errors (timeouts, broken connections).
      const statusErrors = routes.reduce((a, r) => a + r.errors, 0);
      const countedByLoad = Object.entries(result.statuses)
        .filter(([code]) => code !== "200" && code !== "409")
        .reduce((a, [, n]) => a + n, 0);
      if (system && open) {
        begun += open.started;
        sent += result.requests;
      }
      return { ...result, errors: result.errors - countedByLoad + statusErrors, routes };
    },
    async verify(url) {
      const reader = bearer(f.users[0].access);
      const readings = await inParallel([...ledgers], 32, async ([r, ledger]) => {
        const res = await fetch(`${url}/rounds/${f.rounds[r]}`, { headers: reader });
        if (res.status !== 200)
          throw new Error(`case ${key} seats: reading round ${f.rounds[r]} answered ${res.status}`);
        const { members_count } = (await res.json()) as { members_count: number };
        return { round: f.rounds[r], ledger, membersCount: members_count };
      });
      const verdict = `${seatVerdict(readings, SEATS)}; ${await checkPayments(url, f, ledgers)}`;
      if (!sessions || begun === 0) return verdict;
      // Sessions still open when a run stops were cut short: in a short run most are.
      return (
        `${verdict}; ${begun.toLocaleString("en")} sessions begun (${connections} at the start), ` +
        `${(sent / begun).toFixed(1)} requests answered a session`
      );
    },
  };
}

/** How long the payments of the joins may take to appear: they are made from each join's outbox entry. */
const PAYMENTS_SETTLE_MS = 30_000;

/**
 * One payment per join: each caller a join seated lists exactly one payment for that round, none two
 * for a round (bench/seats.ts). Read through GET /users/payments with each caller's current token; the
 * payments are made after the join answers, so callers not yet right are read again until
 * PAYMENTS_SETTLE_MS. Throws when some are still wrong then.
 */
async function checkPayments(
  url: string,
  f: MixedFixtures,
  ledgers: Map<number, SeatLedger>,
): Promise<string> {
  const seated = seatedByJoin([...ledgers].map(([r, ledger]): [string, SeatLedger] => [f.rounds[r], ledger]));
  const byId = new Map(f.users.map((u) => [u.id, u]));
  const payments = new Map<string, { round_id: string }[]>();
  const deadline = Date.now() + PAYMENTS_SETTLE_MS;
  let pending = [...seated.keys()];
  for (;;) {
    await inParallel(pending, 32, async (id) => {
      const res = await fetch(`${url}/users/payments`, { headers: bearer(byId.get(id)?.access ?? "") });
      if (res.status !== 200) throw new Error(`payments check: GET /users/payments answered ${res.status}`);
      payments.set(id, (await res.json()) as { round_id: string }[]);
    });
    pending = pending.filter((id) => paymentProblems(new Map([[id, seated.get(id)!]]), payments) !== null);
    if (pending.length === 0 || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  const problems = paymentProblems(seated, payments);
  if (problems) throw new Error(`payments check: ${problems}`);
  const joins = [...seated.values()].reduce((a, rounds) => a + rounds.size, 0);
  return `one payment per join (${joins.toLocaleString("en")} joins, ${seated.size.toLocaleString("en")} callers)`;
}

const fixed = (n: number) => n.toLocaleString("en", { maximumFractionDigits: 0 });

/** One row per route of the system's run of case 8 or 9. */
export function mixedRouteRows(topology: string, key: string, results: MixedResult[]): Row[] {
  return results.flatMap((r) => {
    const total = r.routes.reduce((a, route) => a + route.requests, 0);
    return r.routes.map((route) => ({
      case: key,
      route: ROUTE_TITLES[route.route],
      topology,
      share: `${total === 0 ? 0 : Math.round((route.requests / total) * 100)}%`,
      requests: route.requests,
      "req/s": fixed(route.rps),
      "p50 ms": Math.round(route.p50),
      "p99 ms": Math.round(route.p99),
      errors: route.errors,
      statuses: Object.entries(route.statuses)
        .map(([code, n]) => `${code}×${n}`)
        .join(" "),
    }));
  });
}

export interface MixedPlan {
  sizes: MixedSizes;
  seconds: number;
  /** Open connections of the load (CONNECTIONS unless `--connections` says otherwise). */
  connections: number;
  /** The routes' shares (MIX unless `--mix` says otherwise). */
  mix: Mix;
  /** Which of cases 8 and 9 run (both unless `--only` says otherwise), in this order on one system. */
  cases: MixedCase[];
  /** The servers' Node options (`--node-options`, bench/node-options.ts); Node's defaults when absent. */
  nodeOptions?: NodeOptions;
}

export const mixedPlanFor = (
  quick: boolean,
  sizes: Partial<MixedSizes>,
  connections: number = CONNECTIONS,
  mix: Mix = MIX,
  cases: MixedCase[] = MIXED_CASES,
): MixedPlan => ({
  sizes: {
    users: sizes.users ?? (quick ? 1_000 : 100_000),
    rounds: sizes.rounds ?? (quick ? 300 : 10_000),
  },
  seconds: quick ? 3 : 60,
  connections,
  mix,
  cases,
});

/** One measured case of the mix: the report's row, and its system run by route. */
export interface MixedOutcome {
  outcome: ScenarioOutcome;
  routes: MixedResult;
}

/**
 * Cases 8 and 9 on a running distributed system, through its client node: seeds, then measures each
 * case asked for (measureMixed), with the seeding time in the notes. The bench runs them on the cluster
 * of cases 1–5 when that runs (it saves starting another), else on a cluster of their own
 * (runMixedBench).
 */
export async function mixedOn(
  baseUrl: string,
  client: ServiceBroker,
  plan: MixedPlan,
  baseline: Baseline,
  log: (line: string) => void,
  watched: Watched[] = [],
): Promise<MixedOutcome[]> {
  const t0 = Date.now();
  log(
    `distributed 8/9: creating ${plan.sizes.users.toLocaleString("en")} users and ` +
      `${plan.sizes.rounds.toLocaleString("en")} rounds`,
  );
  const fixtures = await seedMixed(client, plan.sizes, log);
  log(`distributed 8/9: ready after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return measureMixed(baseUrl, fixtures, plan, baseline, log, watched);
}

/** What seeding took, for the notes. */
function seedingNote(fixtures: MixedFixtures, plan: MixedPlan): string {
  const { seeding } = fixtures;
  const rate = (n: number, s: number) => `${Math.round(n / Math.max(0.1, s)).toLocaleString("en")}/s`;
  return (
    `seeded in ${seeding.total} s (users ${seeding.users} s, ${rate(plan.sizes.users, seeding.users)}; ` +
    `friendships ${seeding.friends} s; rounds ${seeding.rounds} s, ${rate(plan.sizes.rounds, seeding.rounds)}; ` +
    `token sets ${seeding.tokens} s, ${rate(plan.sizes.users, seeding.tokens)})` +
    (seeding.repeated > 0 ? `; ${seeding.repeated} calls tried again (retryable errors)` : "")
  );
}

/**
 * The same requests against moleculer-web alone (bench/floor-server.ts: one action answering the
 * recorded round read, no authentication, storage or cache), as long as the system's run: the most a
 * gateway on moleculer-web can serve on this machine, whatever the system behind it does. It starts
 * once the system has gone quiet (untilQuiet: after seeding or a run it may still write, compact or
 * publish for seconds), so that it does not share the cores with the system's leftovers.
 */
async function measureFloor(
  scenario: ReturnType<typeof mixedScenario>,
  systemUrl: string,
  seconds: number,
  log: (line: string) => void,
  watched: Watched[],
  which: "before" | "after",
): Promise<ReferenceRun> {
  const recorded = await scenario.record(systemUrl);
  const quiet = await untilQuiet(watched);
  const waited = `${(quiet.waitedMs / 1000).toFixed(0)} s`;
  const when = quiet.quiet
    ? `once the system was quiet (${waited})`
    : `while the system still used ${quiet.cores.toFixed(2)} cores (${waited} waited)`;
  const floor = await startBaseline("moleculer-web");
  try {
    await floor.serve(recorded);
    const meter = cpuMeter([{ name: "floor", pid: () => floor.pid }]);
    const r = await scenario.measure({ url: floor.url, side: "baseline", round: 0, seconds, wholeRun: true });
    const cpuMs = meter.perRequest(r.requests).floor;
    log(
      `  ${scenario.key} moleculer-web alone, ${which} the system's run: ${Math.round(r.rps)} req/s, ` +
        `p99 ${r.p99} ms, errors ${r.errors}, ${when}`,
    );
    return { ...r, cpuMs, when };
  } finally {
    await floor.stop();
  }
}

/** A moleculer-web run for the notes: its figures and when it ran. */
const floorNote = (which: string, r: ReferenceRun): string =>
  `moleculer-web alone ${which}: ${Math.round(r.rps).toLocaleString("en")} req/s, p99 ${r.p99} ms, ` +
  `errors ${r.errors}` +
  (r.cpuMs === undefined ? "" : `, ${r.cpuMs.toFixed(3)} ms CPU a request`) +
  `, ${r.when}`;

/**
 * How long an embedded server holding case 8's data may take to answer after it is started: it reads
 * every collection's file first, longer the more users there are. A minute at least, half a minute
 * more per 100,000 users.
 */
export const embeddedStartTimeoutMs = (sizes: MixedSizes): number =>
  Math.max(60_000, (sizes.users / 100_000) * 30_000);

/**
 * Each case of the plan against one seeded system, in turn: moleculer-web alone as long as the system's
 * run (measureFloor), the bare baseline (at most 10 s), the system's run, the bare baseline again,
 * moleculer-web alone again. The cases share the seat check's ledgers, so the last check counts the
 * joins of both.
 */
async function measureMixed(
  baseUrl: string,
  fixtures: MixedFixtures,
  plan: MixedPlan,
  baseline: Baseline,
  log: (line: string) => void,
  watched: Watched[],
): Promise<MixedOutcome[]> {
  const seats: SeatBook = new Map();
  const out: MixedOutcome[] = [];
  for (const key of plan.cases) {
    const scenario = mixedScenario(fixtures, { connections: plan.connections, mix: plan.mix, key, seats });
    log(`${key}: ${scenario.title}`);
    const before = await measureFloor(scenario, baseUrl, plan.seconds, log, watched, "before");
    const outcome = await alternate(scenario, baseUrl, baseline, {
      rounds: 1,
      seconds: plan.seconds,
      log,
      watched,
    });
    const after = await measureFloor(scenario, baseUrl, plan.seconds, log, watched, "after");
    outcome.framework = { before, after };
    outcome.notes.push(
      floorNote("(one action answering the recorded round read, nothing else) before", before),
      floorNote("after", after),
      seedingNote(fixtures, plan),
    );
    out.push({ outcome, routes: outcome.runs[0].system as MixedResult });
  }
  return out;
}

/**
 * Cases 8 and 9 embedded: the data is created by the services in the bench's process on the server's
 * folder, then the one server process starts on it (bench/systems.ts), as the other embedded cases.
 */
export async function runMixedEmbedded(
  plan: MixedPlan,
  baseline: Baseline,
  log: (line: string) => void,
): Promise<MixedOutcome[]> {
  const t0 = Date.now();
  log(
    `embedded 8/9: creating ${plan.sizes.users.toLocaleString("en")} users and ` +
      `${plan.sizes.rounds.toLocaleString("en")} rounds`,
  );
  const system = await startEmbedded((broker) => seedMixed(broker, plan.sizes, log), {
    startTimeoutMs: embeddedStartTimeoutMs(plan.sizes),
    nodeArgs: nodeArgsOf(plan.nodeOptions ?? {}, "embedded"),
  });
  try {
    log(`embedded 8/9: ready after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    return await measureMixed(system.baseUrl, system.fixtures, plan, baseline, log, system.watched);
  } finally {
    await system.stop();
  }
}

export async function runMixedBench(
  plan: MixedPlan,
  baseline: Baseline,
  log: (line: string) => void,
): Promise<MixedOutcome[]> {
  // The stores the other cases use (bench/systems.ts).
  const cluster = await startCluster({
    store: benchStore(),
    env: { ...BENCH_LIMITS, ...mongoCredentials() },
    nodeArgs: distributedNodeArgs(plan.nodeOptions ?? {}),
  });
  try {
    return await mixedOn(cluster.baseUrl, cluster.client, plan, baseline, log, clusterWatched(cluster));
  } finally {
    await cluster.stop();
  }
}
