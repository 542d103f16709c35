/**
 * Two processes of one stateful service sharing its store: the rounds service scaled out to two
 * processes over one MongoDB database, as production runs it. The embedded store is single-process
 * (two rounds processes would each hold rounds of their own), so these cases need MongoDB: they skip
 * with a message where MONGO_URI is unset, and fail instead when REQUIRE_MONGO is set (CI's MongoDB
 * job, .github/workflows/ci.yml). Each cluster stores in a fresh database, dropped afterwards.
 */
import { seed, type DemoManifest, type ManifestUser } from "../../shared/ops/seed";
import { freePort, requireBinary } from "../support/brokers";
import { joinOverHttp, newPaidRound, paymentsFor, settledPayments, type JoinAnswer } from "../support/rounds";
import { startCluster, type Cluster } from "../support/cluster";
import { mongoForTests } from "../support/mongo";
import { NO_GATEWAY_CACHES, steadyReads } from "../support/steady-reads";
import { newUser } from "../support/system";

const mongo = mongoForTests();
if (mongo.skipReason) {
  process.stderr.write(`skipping two rounds processes sharing one store: ${mongo.skipReason}\n`);
}
const run = requireBinary("nats-server") && requireBinary("redis-server") && !mongo.skipReason;
const maybe = run ? describe : describe.skip;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface StoredRound {
  _id: string;
  members_count: number;
  members: Record<string, unknown>;
}

/** Two rounds processes over one MongoDB database, each serving its Prometheus metrics on its own port. */
async function twoRoundsProcesses(env: Record<string, string> = {}) {
  const metricsPorts = { rounds: await freePort(), "rounds#2": await freePort() };
  const cluster = await startCluster({
    store: "mongodb",
    replicas: { rounds: 2 },
    env,
    processEnv: {
      rounds: { METRICS_PORT: String(metricsPorts.rounds) },
      "rounds#2": { METRICS_PORT: String(metricsPorts["rounds#2"]) },
    },
  });
  return { cluster, metricsPorts };
}

/** How many calls of `action` the process serving metrics on `port` has handled (Moleculer's counter). */
async function callsServed(port: number, action: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith("moleculer_request_total{") && line.includes(`action="${action}"`)) {
      total += Number(line.slice(line.lastIndexOf(" ") + 1));
    }
  }
  return total;
}

/**
 * Reads the round through the gateway until both rounds processes have served one: the gateway then
 * knows both, so the load that follows is balanced over them from its first request.
 */
async function untilBothServe(ports: number[], url: string, token: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const served = await Promise.all(ports.map((p) => callsServed(p, "rounds.get")));
    if (served.every((n) => n > 0)) return;
    await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    await sleep(50);
  }
  throw new Error("the gateway never sent a read to both rounds processes");
}

/** `count` new users with tokens, made in groups so the users and auth processes are not flooded. */
async function newUsers(cluster: Cluster, count: number, prefix: string): Promise<ManifestUser[]> {
  const users: ManifestUser[] = [];
  while (users.length < count) {
    const group = Math.min(50, count - users.length);
    users.push(...(await Promise.all(Array.from({ length: group }, () => newUser(cluster.client, prefix)))));
  }
  return users;
}

async function storedRound(cluster: Cluster, roundId: string): Promise<StoredRound> {
  const rounds = (await cluster.storeOf("rounds")).collection<StoredRound>("rounds");
  const [doc] = await rounds.find({ _id: roundId });
  return doc;
}

maybe("two rounds processes sharing one MongoDB, under a join stampede", () => {
  const SEATS = 100;
  const CROWD = 500;
  let cluster: Cluster;
  let metricsPorts: Record<"rounds" | "rounds#2", number>;
  let manifest: DemoManifest;

  beforeAll(async () => {
    ({ cluster, metricsPorts } = await twoRoundsProcesses());
    manifest = await seed(cluster.client, cluster.baseUrl);
  }, 120_000);
  afterAll(() => cluster?.stop());

  it(`when ${CROWD} distinct users join a ${SEATS}-seat round at once through the gateway, then both processes take joins, exactly ${SEATS} get 200 and the rest 409 Round is full, and the stored round has exactly those ${SEATS} members, each paying once`, async () => {
    const roundId = await newPaidRound(cluster, manifest, SEATS, "150");
    const crowd = await newUsers(cluster, CROWD, "stampede");
    const ports = [metricsPorts.rounds, metricsPorts["rounds#2"]];
    const url = `${cluster.baseUrl}/rounds/${roundId}`;
    await untilBothServe(ports, url, manifest.users.alice.access_token);
    const before = await Promise.all(ports.map((p) => callsServed(p, "rounds.join")));

    const answers = await Promise.all(crowd.map((u) => joinOverHttp(cluster.baseUrl, roundId, u, "null")));

    const served = (await Promise.all(ports.map((p) => callsServed(p, "rounds.join")))).map(
      (n, i) => n - before[i],
    );
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 409);
    process.stdout.write(
      `${CROWD} joins into ${SEATS} seats over two rounds processes: ${ok.length}×200, ${refused.length}×409, ` +
        `others ${CROWD - ok.length - refused.length}; joins served ${served.join(" and ")}; slowest answer ` +
        `${answers.reduce((max, a) => Math.max(max, a.ms), 0)} ms\n`,
    );
    // The load was shared: each process ran a good part of the joins (round-robin gives about half).
    for (const n of served) expect(n).toBeGreaterThanOrEqual(CROWD / 5);
    expect(served[0] + served[1]).toBeGreaterThanOrEqual(CROWD);

    expect(ok).toHaveLength(SEATS);
    expect(refused).toHaveLength(CROWD - SEATS);
    for (const a of refused) expect(a.body).toEqual({ detail: "Round is full" });

    const doc = await storedRound(cluster, roundId);
    expect(doc.members_count).toBe(SEATS);
    expect(Object.keys(doc.members).sort()).toEqual(ok.map((a) => a.user.id).sort());

    // Each winner's fact was relayed by one of the two processes' relays (both sweep the same
    // outboxes): one payment each, none for the others.
    const winners = ok.map((a) => a.user);
    expect(await settledPayments(cluster.baseUrl, winners, roundId)).toEqual(winners.map(() => 1));
    const losers = refused.slice(0, 20).map((a) => a.user);
    expect(await Promise.all(losers.map((u) => paymentsFor(cluster.baseUrl, u, roundId)))).toEqual(
      losers.map(() => 0),
    );
  }, 240_000);
});

maybe("one of two rounds processes sharing one MongoDB killed under load", () => {
  const JOINERS = 120;
  let cluster: Cluster;
  let metricsPorts: Record<"rounds" | "rounds#2", number>;
  let manifest: DemoManifest;

  beforeAll(async () => {
    // Every read and join reaches a rounds process (no answer or token kept by the gateway).
    ({ cluster, metricsPorts } = await twoRoundsProcesses(NO_GATEWAY_CACHES));
    manifest = await seed(cluster.client, cluster.baseUrl);
  }, 120_000);
  afterAll(() => cluster?.stop());

  it("when one rounds process is killed (-9) under steady reads and joins, then fewer than 1% of reads fail, full service is back within 5 s, nothing is answered 500, and every join is stored and paid exactly once", async () => {
    const roundId = await newPaidRound(cluster, manifest, JOINERS, "150");
    const joiners = await newUsers(cluster, JOINERS, "steady");
    const ports = [metricsPorts.rounds, metricsPorts["rounds#2"]];
    const url = `${cluster.baseUrl}/rounds/${manifest.rounds.open}`;
    const headers = { authorization: `Bearer ${manifest.users.alice.access_token}` };
    await untilBothServe(ports, url, manifest.users.alice.access_token);

    const reads = steadyReads(url, headers);
    // Joins go on all through: four clients, one user after another, each user trying again (joins are
    // idempotent) until accepted, as a client does. About 13 joins a second, so they span the kill.
    const attempts: JoinAnswer[] = [];
    const queue = [...joiners];
    const joining = Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let user = queue.shift(); user; user = queue.shift()) {
          const deadline = Date.now() + 60_000;
          for (;;) {
            const a = await joinOverHttp(cluster.baseUrl, roundId, user, "null");
            attempts.push(a);
            if (a.status === 200 || Date.now() > deadline) break;
            await sleep(250);
          }
          await sleep(300);
        }
      }),
    );
    await sleep(2000);
    const killedAt = Date.now();
    await cluster.processes.get("rounds#2")!.kill();
    await sleep(10_000);
    await reads.stop();
    await joining;

    const { outcomes } = reads;
    const failed = outcomes.filter((o) => o.status !== 200);
    const slow = outcomes.filter((o) => o.status !== 200 || o.ms > 1000);
    const fullServiceAt = slow.reduce((at, o) => Math.max(at, o.sentAt + o.ms), killedAt);
    const joinFailures = attempts.filter((a) => a.status !== 200);
    process.stdout.write(
      `kill -9 of one of two rounds processes: ${failed.length} of ${outcomes.length} reads failed, ` +
        `${slow.length} waited over 1 s, full service ${fullServiceAt - killedAt} ms after the kill; ` +
        `${attempts.length} join attempts for ${JOINERS} users, ${joinFailures.length} not 200 ` +
        `(${joinFailures.map((a) => a.status).join(", ") || "none"}), slowest ${attempts.reduce((max, a) => Math.max(max, a.ms), 0)} ms\n`,
    );

    // Reads: the short window of a dead process, then the survivor serves everything.
    expect(outcomes.length).toBeGreaterThan(500);
    expect(failed.length / outcomes.length).toBeLessThan(0.01);
    expect(fullServiceAt - killedAt).toBeLessThanOrEqual(5000);
    // Nothing fails as a fault: what did fail is the spec's retryable 503 (or a 504 timeout), in its
    // shape, never a 500 or a lost connection.
    for (const o of failed) {
      expect([503, 504]).toContain(o.status);
      expect(o.body).toEqual({ detail: expect.any(String) });
    }
    // Joins: every attempt answered within 5 s, with 200 or the retryable 503.
    for (const a of attempts) {
      expect([200, 503]).toContain(a.status);
      expect(a.ms).toBeLessThan(5000);
    }
    // Every user got in, and is stored once: a join the dead process had written but not answered is
    // found by the retry on the survivor (already a member: 200, nothing added).
    const accepted = new Set(attempts.filter((a) => a.status === 200).map((a) => a.user.id));
    expect(accepted.size).toBe(JOINERS);
    const doc = await storedRound(cluster, roundId);
    expect(doc.members_count).toBe(JOINERS);
    expect(Object.keys(doc.members).sort()).toEqual(joiners.map((u) => u.id).sort());
    // And paid once: the dead process's unpublished facts are in the shared outboxes, which the
    // survivor's relay sweeps.
    expect(await settledPayments(cluster.baseUrl, joiners, roundId)).toEqual(joiners.map(() => 1));
    const ready = await fetch(`${cluster.baseUrl}/health/ready`);
    expect(ready.status).toBe(200);
  }, 240_000);
});
