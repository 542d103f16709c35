/**
 * Caching really in Redis, across nodes: three brokers over a private nats-server share a private
 * redis-server as their cacher. Reads leave keys in Redis, a join on one node makes every node read the
 * new state, and per-user lists stay per user.
 */
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import Redis from "ioredis";
import type { ServiceBroker } from "moleculer";
import { loadConfig } from "../../shared/config";
import { call } from "../../shared/contracts";
import { seed, type DemoManifest } from "../../shared/ops/seed";
import { createBroker } from "../../shared/runtime/broker";
import { requireBinary, startNatsServer, startRedisServer, type RunningBroker } from "../support/brokers";
import { newUser, testEnv } from "../support/system";

const run = requireBinary("nats-server") && requireBinary("redis-server");
const maybe = run ? describe : describe.skip;

maybe("the Redis cacher across nodes", () => {
  let nats: RunningBroker;
  let redisServer: RunningBroker;
  let redis: Redis;
  let brokers: ServiceBroker[] = [];
  let manifest: DemoManifest;
  let baseUrl: string;
  const namespace = `cache${process.pid}`;

  beforeAll(async () => {
    [nats, redisServer] = await Promise.all([startNatsServer(), startRedisServer()]);
    redis = new Redis(redisServer.url);
    const env = (node: string) =>
      loadConfig(
        testEnv({ TRANSPORTER: nats.url, CACHER: redisServer.url, NAMESPACE: namespace, NODE_ID: node }),
      );
    brokers = [
      createBroker(env("front"), ["gateway", "auth"]),
      createBroker(env("people"), ["users", "settings", "notifier"]),
      createBroker(env("play"), ["rounds", "stores"]),
    ];
    await Promise.all(brokers.map((b) => b.start()));
    await brokers[0].waitForServices(["users", "rounds", "stores", "settings", "notifier"], 15_000);
    const gateway = brokers[0].getLocalService("gateway") as unknown as { server: Server };
    baseUrl = `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`;
    manifest = await seed(brokers[0], baseUrl);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(brokers.map((b) => b.stop()));
    redis?.disconnect();
    await Promise.all([nats?.stop(), redisServer?.stop()]);
  });

  const get = (path: string, token: string) =>
    fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } }).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as any,
    }));
  const keys = (pattern: string) => redis.keys(`${namespace}-cache-${pattern}`);

  it("when a round is read through the gateway, then its snapshot, profiles and item are cached in Redis", async () => {
    const res = await get(`/rounds/${manifest.rounds.open}`, manifest.users.alice.access_token);
    expect(res.status).toBe(200);
    expect(await keys(`rounds.snapshot:${manifest.rounds.open}:*`)).toHaveLength(1);
    expect((await keys("stores.item:*")).length).toBeGreaterThan(0);
    expect((await keys("users.status:*")).length).toBeGreaterThan(0);
  });

  it("when a user joins through another node, then every node reads the new member (cache cleaned across nodes)", async () => {
    const reader = manifest.users.alice.access_token;
    const before = await get(`/rounds/${manifest.rounds.open}`, reader);
    const user = await newUser(brokers[1], "joiner");
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
    // A directly called read on the rounds node agrees.
    const direct = await call(
      brokers[2],
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

  it("when a friendship is added on the users node, then the cached lists are cleaned in Redis", async () => {
    const { alice, carol } = manifest.users;
    await get("/users/friends", carol.access_token);
    expect(await keys(`users.friends:${carol.id}`)).toHaveLength(1);
    await call(brokers[1], "users.addFriends", { a: alice.id, b: carol.id });
    expect(await keys(`users.friends:${carol.id}`)).toHaveLength(0);
    expect((await get("/users/friends", carol.access_token)).body.map((f: any) => f.id)).toEqual([alice.id]);
  });
});
