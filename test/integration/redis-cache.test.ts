/**
 * Caching really in Redis, across processes: the gateway and each service run as their own OS process
 * over a private nats-server and share a private redis-server as their cacher. Reads leave keys in
 * Redis, a join in the rounds process makes every process read the new state, and per-user lists stay
 * per user.
 */
import Redis from "ioredis";
import { call } from "../../shared/contracts";
import { seed, type DemoManifest } from "../../shared/ops/seed";
import { requireBinary } from "../support/brokers";
import { startCluster, type Cluster } from "../support/cluster";
import { newUser } from "../support/system";

const run = requireBinary("nats-server") && requireBinary("redis-server");
const maybe = run ? describe : describe.skip;

maybe("the Redis cacher across processes", () => {
  let cluster: Cluster;
  let redis: Redis;
  let manifest: DemoManifest;
  let baseUrl: string;
  let namespace: string;

  beforeAll(async () => {
    cluster = await startCluster();
    ({ baseUrl, namespace } = cluster);
    redis = new Redis(cluster.redis.url, {
      username: "ops",
      password: cluster.redis.passwords.ops,
    });
    manifest = await seed(cluster.client, baseUrl);
  }, 120_000);

  afterAll(async () => {
    redis?.disconnect();
    await cluster?.stop();
  });

  const get = (path: string, token: string) =>
    fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } }).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as any,
    }));
  /** The keys matching `pattern`, by SCAN (the ops user may not run KEYS: shared/ops/store-users.ts). */
  const keys = async (pattern: string) => {
    const found: string[] = [];
    for await (const batch of redis.scanStream({ match: `${namespace}-cache-${pattern}`, count: 1000 }))
      found.push(...(batch as string[]));
    return [...new Set(found)];
  };

  it("when a round is read through the gateway, then its snapshot, profiles and item are cached in Redis", async () => {
    const res = await get(`/rounds/${manifest.rounds.open}`, manifest.users.alice.access_token);
    expect(res.status).toBe(200);
    expect(await keys(`rounds.snapshot:${manifest.rounds.open}:*`)).toHaveLength(1);
    expect((await keys("stores.item:*")).length).toBeGreaterThan(0);
    expect((await keys("users.status:*")).length).toBeGreaterThan(0);
  });

  it("when a user joins in the rounds process, then every process reads the new member (cache cleaned across processes)", async () => {
    const reader = manifest.users.alice.access_token;
    const before = await get(`/rounds/${manifest.rounds.open}`, reader);
    const user = await newUser(cluster.client, "joiner");
    const join = await fetch(`${baseUrl}/rounds/${manifest.rounds.open}/join`, {
      method: "POST",
      headers: { authorization: `Bearer ${user.access_token}`, "content-type": "application/json" },
      body: "null",
    });
    expect(join.status).toBe(200);
    const after = await get(`/rounds/${manifest.rounds.open}`, reader);
    expect(after.body.members_count).toBe(before.body.members_count + 1);
    // Snapshots are kept per revision: the join cleaned the old one, the read cached the new one (two
    // keys would mean the clean-up did not reach Redis).
    expect(await keys(`rounds.snapshot:${manifest.rounds.open}:*`)).toHaveLength(1);
    // A read called directly on the rounds process agrees.
    const direct = await call(
      cluster.client,
      "rounds.get",
      { round_id: manifest.rounds.open },
      { meta: { user: { id: manifest.users.alice.id, token_id: "t" } } },
    );
    expect(direct.members_count).toBe(after.body.members_count);
  });

  it("when two users read their friends in turn, then each list is cached under its own user and never served to the other", async () => {
    const { alice, bob } = manifest.users;
    for (let i = 0; i < 2; i++) {
      expect((await get("/users/friends", alice.access_token)).body.map((f: any) => f.id)).toEqual([bob.id]);
      expect((await get("/users/friends", bob.access_token)).body.map((f: any) => f.id)).toEqual([alice.id]);
    }
    expect(await keys(`users.friends:${alice.id}`)).toHaveLength(1);
    expect(await keys(`users.friends:${bob.id}`)).toHaveLength(1);
  });

  it("when a friendship is added in the users process, then the cached lists are cleaned in Redis", async () => {
    const { alice, carol } = manifest.users;
    await get("/users/friends", carol.access_token);
    expect(await keys(`users.friends:${carol.id}`)).toHaveLength(1);
    await call(cluster.client, "users.addFriends", { a: alice.id, b: carol.id });
    expect(await keys(`users.friends:${carol.id}`)).toHaveLength(0);
    expect((await get("/users/friends", carol.access_token)).body.map((f: any) => f.id)).toEqual([alice.id]);
  });

  it("when an API key the gateway accepted is revoked from another node, then the gateway refuses it", async () => {
    const key = await call(cluster.client, "auth.createApiKey", { scope: "app" });
    const settings = () =>
      fetch(`${baseUrl}/app-settings?version=1.0.0&platform=ios`, { headers: { "x-api-key": key.key } });
    for (let i = 0; i < 2; i++) expect((await settings()).status).toBe(200);
    await call(cluster.client, "auth.revokeApiKey", { id: key.id });
    // The gateway hears of it by an event, which may come just after the revocation's answer.
    let res = await settings();
    for (let i = 0; i < 50 && res.status === 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      res = await settings();
    }
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ detail: "API key revoked" });
  });
});
