/**
 * The facts services announce to each other survive crashes: a join's payment and a store event's round
 * are never lost, whichever process dies or restarts, and no request hangs on a dead process. Every case
 * runs the cluster with its default configuration (only the log level is set).
 */
import { connect } from "nats";
import { OUTBOX_RETENTION_MS } from "../../shared/outbox/expiry";
import { seed, type DemoManifest, type ManifestUser } from "../../shared/ops/seed";
import { requireBinary } from "../support/brokers";
import { joinOverHttp, newPaidRound, settledPayments, type JoinAnswer } from "../support/rounds";
import { startCluster, type Cluster } from "../support/cluster";
import { eventFields, eventForm, pngBytes } from "../support/upload";

const run = requireBinary("nats-server") && requireBinary("redis-server");
const maybe = run ? describe : describe.skip;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What a client does with a failed join: tries again (joins are idempotent) until it gets its 200. */
async function joinUntilAccepted(baseUrl: string, roundId: string, user: ManifestUser, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  let last: JoinAnswer | null = null;
  while (Date.now() < deadline) {
    last = await joinOverHttp(baseUrl, roundId, user);
    if (last.status === 200) return last;
    await sleep(250);
  }
  throw new Error(`join of ${user.username} never accepted; last answer ${last?.status}`);
}

/** Every join was answered within 5 s: a success, or the spec's 503 that a client can retry. */
function expectAnsweredInTime(answers: JoinAnswer[]): void {
  for (const a of answers) {
    expect([200, 503]).toContain(a.status);
    expect(a.ms).toBeLessThan(5000);
    if (a.status === 503) expect(a.body).toEqual({ detail: "Service Unavailable" });
  }
}

/**
 * Each client whose join failed tries again until it is accepted; then every user of the crowd must
 * have exactly one payment for the round.
 */
async function retryAndCountPayments(
  baseUrl: string,
  roundId: string,
  answers: JoinAnswer[],
  crowd: ManifestUser[],
) {
  const retried = await Promise.all(
    answers.filter((a) => a.status !== 200).map((a) => joinUntilAccepted(baseUrl, roundId, a.user, 60_000)),
  );
  const counts = await settledPayments(baseUrl, crowd, roundId, 60_000);
  expect(counts).toEqual(crowd.map(() => 1));
  return { retried, counts };
}

function report(label: string, answers: JoinAnswer[]): string {
  const byStatus = new Map<number, number>();
  for (const a of answers) byStatus.set(a.status, (byStatus.get(a.status) ?? 0) + 1);
  const statuses = [...byStatus].map(([s, n]) => `${n}×${s}`).join(", ");
  return `${label}: ${answers.length} joins (${statuses}), slowest answer ${Math.max(...answers.map((a) => a.ms))} ms`;
}

maybe("durable facts in the cluster", () => {
  let cluster: Cluster;
  let manifest: DemoManifest;

  beforeAll(async () => {
    cluster = await startCluster();
    manifest = await seed(cluster.client, cluster.baseUrl);
  }, 120_000);
  afterAll(() => cluster?.stop());

  it("when the cluster runs, then every JetStream stream of its namespace keeps a message at most as long as an outbox keeps a fact (OUTBOX_RETENTION_MS)", async () => {
    const nc = await connect(cluster.nats.connectOptions());
    try {
      const jsm = await nc.jetstreamManager();
      const ages: Record<string, number> = {};
      for await (const stream of jsm.streams.list()) {
        if (stream.config.name.startsWith(`${cluster.namespace}_`))
          ages[stream.config.name] = stream.config.max_age;
      }
      // The fact channels, the notifier's jobs and the dead letters.
      expect(Object.keys(ages).length).toBeGreaterThanOrEqual(3);
      for (const age of Object.values(ages)) expect(age).toBe(OUTBOX_RETENTION_MS * 1e6);
    } finally {
      await nc.close();
    }
  });

  it("when the users process is killed (-9) in the middle of a burst of paid joins, then every join is answered within 5 s and, once users is back, every member has exactly one payment", async () => {
    const roundId = await newPaidRound(cluster, manifest, 100, "150");
    const crowd = manifest.users.crowd.slice(0, 15);
    const users = cluster.processes.get("users")!;

    const burst = Promise.all(crowd.map((u) => joinOverHttp(cluster.baseUrl, roundId, u)));
    await sleep(40);
    const killedAt = Date.now();
    await users.kill();
    const answers = await burst;

    expectAnsweredInTime(answers);

    users.start();
    await cluster.waitUntilReady();
    const backAt = Date.now();
    const { retried, counts } = await retryAndCountPayments(cluster.baseUrl, roundId, answers, crowd);
    process.stdout.write(
      `${report("users killed -9 mid-burst", answers)}; ${retried.length} retried to 200; users back ${backAt - killedAt} ms after the kill; payments ${counts.filter((c) => c === 1).length}/${crowd.length}, lost ${counts.filter((c) => c === 0).length}, doubled ${counts.filter((c) => c > 1).length}, all present ${Date.now() - backAt} ms after users was back\n`,
    );
  }, 180_000);

  it("when the rounds process is killed (-9) right after store events are created, then once it is back each event's round exists, once", async () => {
    const rounds = cluster.processes.get("rounds")!;
    const create = () =>
      fetch(`${cluster.baseUrl}/stores/${manifest.stores.alice_store}/events`, {
        method: "POST",
        body: eventForm(eventFields({ name: "Crash test evening" }), pngBytes()),
        headers: { authorization: `Bearer ${manifest.users.alice.access_token}` },
      });
    const responses = await Promise.all([create(), create(), create()]);
    await rounds.kill();
    const killedAt = Date.now();
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200]);
    const events = (await Promise.all(responses.map((r) => r.json()))) as Array<{
      id: string;
      round_id: string;
    }>;

    rounds.start();
    await cluster.waitUntilReady();
    const store = (await cluster.storeOf("rounds")).collection<{ _id: string; item_id: string }>("rounds");
    const deadline = Date.now() + 60_000;
    let found: number[] = [];
    while (Date.now() < deadline) {
      found = await Promise.all(events.map((e) => store.count({ item_id: e.id })));
      if (found.every((n) => n >= 1)) break;
      await sleep(250);
    }
    const openedAt = Date.now();
    await sleep(1500);
    found = await Promise.all(events.map((e) => store.count({ item_id: e.id })));
    expect(found).toEqual([1, 1, 1]);
    for (const e of events) {
      const res = await fetch(`${cluster.baseUrl}/rounds/${e.round_id}`, {
        headers: { authorization: `Bearer ${manifest.users.alice.access_token}` },
      });
      expect(res.status).toBe(200);
    }
    process.stdout.write(
      `rounds killed -9 after 3 store events: rounds lost 0, doubled 0; all open ${openedAt - killedAt} ms after the kill\n`,
    );
  }, 180_000);

  it("when nats-server is restarted during a burst of paid joins and a store event, then every member has exactly one payment and the event's round exists, once", async () => {
    const roundId = await newPaidRound(cluster, manifest, 100, "150");
    const crowd = manifest.users.crowd.slice(15, 30);

    const event = await fetch(`${cluster.baseUrl}/stores/${manifest.stores.alice_store}/events`, {
      method: "POST",
      body: eventForm(eventFields({ name: "Outage evening" }), pngBytes()),
      headers: { authorization: `Bearer ${manifest.users.alice.access_token}` },
    });
    expect(event.status).toBe(200);
    const { id: eventId, round_id: eventRoundId } = (await event.json()) as { id: string; round_id: string };

    const burst = Promise.all(crowd.map((u) => joinOverHttp(cluster.baseUrl, roundId, u)));
    await sleep(40);
    const restartedAt = Date.now();
    const restart = cluster.nats.restart(1000);
    const answers = await burst;
    await restart;
    expectAnsweredInTime(answers);

    const { retried, counts } = await retryAndCountPayments(cluster.baseUrl, roundId, answers, crowd);

    const rounds = (await cluster.storeOf("rounds")).collection("rounds");
    expect(await rounds.count({ item_id: eventId })).toBe(1);
    const res = await fetch(`${cluster.baseUrl}/rounds/${eventRoundId}`, {
      headers: { authorization: `Bearer ${manifest.users.alice.access_token}` },
    });
    expect(res.status).toBe(200);
    process.stdout.write(
      `${report("nats-server restarted mid-burst", answers)}; ${retried.length} retried to 200; payments lost ${counts.filter((c) => c === 0).length}, doubled ${counts.filter((c) => c > 1).length}; settled ${Date.now() - restartedAt} ms after the restart\n`,
    );
  }, 180_000);

  it("when the gateway is killed (-9) after a store event with an Idempotency-Key was written, then the client's retry with the key gets that event back: one event, one round", async () => {
    const gateway = cluster.processes.get("gateway")!;
    const name = `Answer lost evening ${Date.now()}`;
    const fields = eventFields({ name, start_time: "2031-03-01T19:00:00+03:00" });
    const picture = pngBytes(30_000);
    const key = `crash-${Date.now()}`;
    const send = () =>
      fetch(`${cluster.baseUrl}/stores/${manifest.stores.alice_store}/events`, {
        method: "POST",
        body: eventForm(fields, picture),
        headers: { authorization: `Bearer ${manifest.users.alice.access_token}`, "Idempotency-Key": key },
      });
    const items = (await cluster.storeOf("stores")).collection<{ _id: string; name: string }>("items");
    const first = send().then(
      (r) => String(r.status),
      () => "no answer",
    );
    const deadline = Date.now() + 30_000;
    while ((await items.count({ name })) === 0) {
      if (Date.now() > deadline) throw new Error("the event was never written");
      await sleep(2);
    }
    await gateway.kill();
    const killedAt = Date.now();
    const firstAnswer = await first;

    gateway.start();
    for (;;) {
      const up = await fetch(`${cluster.baseUrl}/health`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (up) break;
      if (Date.now() > killedAt + 60_000) throw new Error("the gateway did not come back");
      await sleep(100);
    }
    const retry = await send();
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    const event = (await retry.json()) as { id: string; round_id: string };
    expect(await items.count({ name })).toBe(1);
    const rounds = (await cluster.storeOf("rounds")).collection<{ _id: string; item_id: string }>("rounds");
    const roundDeadline = Date.now() + 60_000;
    while ((await rounds.count({ item_id: event.id })) === 0 && Date.now() < roundDeadline) await sleep(250);
    expect(await rounds.count({ item_id: event.id })).toBe(1);
    const round = await fetch(`${cluster.baseUrl}/rounds/${event.round_id}`, {
      headers: { authorization: `Bearer ${manifest.users.alice.access_token}` },
    });
    expect(round.status).toBe(200);
    process.stdout.write(
      `gateway killed -9 once a keyed store event was written (first answer: ${firstAnswer}); the retry ${Date.now() - killedAt} ms after the kill replayed it: events 1, rounds 1\n`,
    );
  }, 180_000);
});
