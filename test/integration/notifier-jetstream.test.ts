/**
 * The notifier's durable channel for real: two brokers over a private nats-server with JetStream, the
 * gateway and domain services on one, the notifier on the other. A multicast is accepted by one node,
 * travels on the JetStream stream, and is delivered by the other.
 */
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import type { ServiceBroker } from "moleculer";
import { connect } from "nats";
import { loadConfig } from "../../shared/config";
import { seed, type DemoManifest } from "../../shared/ops/seed";
import { createBroker } from "../../app/broker";
import { requireBinary, startNatsServer, type RunningBroker } from "../support/brokers";
import { testEnv } from "../support/system";

const run = requireBinary("nats-server");
const maybe = run ? describe : describe.skip;

maybe("notifier over NATS JetStream", () => {
  let nats: RunningBroker;
  let front: ServiceBroker;
  let notifier: ServiceBroker;
  let manifest: DemoManifest;
  let baseUrl: string;
  const namespace = `it${process.pid}`;

  beforeAll(async () => {
    nats = await startNatsServer();
    const env = () => loadConfig(testEnv({ TRANSPORTER: nats.url, NAMESPACE: namespace }));
    front = createBroker(env(), ["gateway", "auth", "users", "rounds", "stores", "settings"]);
    notifier = createBroker(env(), ["notifier"]);
    await Promise.all([front.start(), notifier.start()]);
    await front.waitForServices(["notifier"], 10_000);
    const gateway = front.getLocalService("gateway") as unknown as { server: Server };
    baseUrl = `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`;
    manifest = await seed(front, baseUrl);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([front?.stop(), notifier?.stop()]);
    await nats?.stop();
  });

  it("when both nodes run, then /health/ready reports the transporter connected and every service found", async () => {
    const res = await fetch(`${baseUrl}/health/ready`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      status: "ready",
      checks: expect.objectContaining({ transporter: "ok", cacher: "ok", notifier: "ok", rounds: "ok" }),
    });
  });

  it("when a multicast is accepted on one node, then the notifier node delivers it from the JetStream channel", async () => {
    const key = manifest.api_keys.notifications;
    const res = await fetch(`${baseUrl}/notifications/send-multicast`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": key },
      body: JSON.stringify({
        title: "Over NATS",
        user_ids: [manifest.users.alice.id, manifest.users.bob.id],
      }),
    });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };

    let job: any;
    for (let i = 0; i < 100; i++) {
      job = await (await fetch(`${baseUrl}/notifications/${id}`, { headers: { "x-api-key": key } })).json();
      if (job.status === "done") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(job).toEqual(expect.objectContaining({ status: "done", recipients: 2, devices: 3, sent: 3 }));

    // The job really travelled on a JetStream stream, and a consumer acknowledged it.
    const nc = await connect({ servers: nats.url });
    try {
      const jsm = await nc.jetstreamManager();
      const stream = await jsm.streams.info(`${namespace}_notifier_jobs`);
      expect(stream.state.messages).toBeGreaterThanOrEqual(1);
      const consumers = await jsm.consumers.list(stream.config.name).next();
      expect(consumers.length).toBe(1);
      expect(consumers[0].num_ack_pending).toBe(0);
      // Bounded in flight, and the default window (the notifier signals progress every third of it).
      expect(consumers[0].config.max_ack_pending).toBe(2);
      expect(consumers[0].config.ack_wait).toBe(15 * 1e9);
      expect(consumers[0].delivered.stream_seq).toBeGreaterThanOrEqual(1);
    } finally {
      await nc.close();
    }
  });
});
