/**
 * The liveness middleware around a NATS outage: a reconnected node is heard from at once (Moleculer's
 * transporter announces it only with the nats 1.x client), an INFO counts as a heartbeat, and calls are
 * held while the connection, or their callee's, is not back.
 */
import type { ServiceBroker } from "moleculer";
import {
  encodeOutage,
  LivenessMiddleware,
  outageOf,
  type LivenessOptions,
  type Outage,
  NATS_RECONNECTED_EVENT,
} from "../../../../shared/runtime/liveness";

interface FakeNode {
  id: string;
  metadata?: Record<string, unknown>;
  local?: boolean;
  available: boolean;
  instanceID: string;
  lastHeartbeatTime: number;
}

/** A status stream the test pushes NATS connection events into. */
function statusStream() {
  const queued: { type: string }[] = [];
  let wake: (() => void) | null = null;
  return {
    push(type: string) {
      queued.push({ type });
      wake?.();
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        while (queued.length > 0) yield queued.shift()!;
        await new Promise<void>((r) => (wake = r));
        wake = null;
      }
    },
  };
}

interface Packet {
  type: string;
  target: string | null;
}

interface Pending {
  nodeID: string;
  action: { name: string };
  reject(err: Error): void;
}

function fakeBroker(nodes: FakeNode[], probeAnswer: () => Uint8Array = () => new Uint8Array(0)) {
  const status = statusStream();
  const pendingRequests = new Map<string, Pending>();
  /** What this node answers its own probe subject with. */
  let answerProbe: (msg: { respond(data?: Uint8Array): void }) => void = () => undefined;
  const listeners = new Map<string, ((p: unknown) => void)[]>();
  const announced: string[] = [];
  /** Local events the middleware raised on this broker. */
  const localEvents: string[] = [];
  const localNode = { id: "gateway-1", local: true, lastHeartbeatTime: Math.round(process.uptime()) };
  const broker = {
    nodeID: "gateway-1",
    metadata: {} as Record<string, unknown>,
    options: { requestTimeout: 10_000 },
    localBus: {
      on: (event: string, fn: (p: unknown) => void) =>
        listeners.set(event, [...(listeners.get(event) ?? []), fn]),
    },
    getLogger: () => ({ warn: () => undefined }),
    broadcastLocal: (event: string) => {
      localEvents.push(event);
    },
    transit: {
      pendingRequests,
      tx: {
        prefix: "MOL",
        client: {
          request: async () => ({ data: probeAnswer() }),
          status: () => status,
          subscribe: (_subject: string, opts: { callback: (err: unknown, msg: never) => void }) => {
            answerProbe = (msg) => opts.callback(null, msg as never);
          },
        },
      },
    },
    registry: {
      nodes: {
        localNode,
        get: (id: string) => nodes.find((n) => n.id === id),
        toArray: () => [localNode, ...nodes],
        disconnected: (id: string) => {
          const node = nodes.find((n) => n.id === id);
          if (node?.available) {
            node.available = false;
            emit("$node.disconnected", { node, unexpected: true });
          }
        },
      },
      discoverer: {
        sendLocalNodeInfo: async () => announced.push("INFO"),
        discoverAllNodes: async () => announced.push("DISCOVER"),
      },
    },
  };
  const emit = (event: string, payload: unknown) => listeners.get(event)?.forEach((fn) => fn(payload));
  const probeMe = () => {
    let answer: Uint8Array | undefined;
    answerProbe({ respond: (data) => (answer = data) });
    return answer;
  };
  return {
    broker: broker as unknown as ServiceBroker,
    raw: broker,
    status,
    announced,
    localEvents,
    emit,
    pendingRequests,
    probeMe,
  };
}

const now = () => Math.round(process.uptime());
const settle = () => new Promise((r) => setImmediate(r));

describe("liveness after a NATS outage", () => {
  type Ctx = {
    id: string;
    nodeID: string;
    action: { name: string };
    options: { timeout: number };
    params: unknown;
  };
  type Next = (ctx: Ctx) => Promise<unknown>;
  function start(
    nodes: FakeNode[],
    probeAnswer?: () => Uint8Array,
    warnings: string[] = [],
    options: Partial<LivenessOptions> = {},
  ) {
    const fake = fakeBroker(nodes, probeAnswer);
    // Probing at once and often: this suite is about what a probe's answer leads to, not its timing.
    const mw = LivenessMiddleware(
      { probeAfterMs: 0, tickMs: 5, ...options },
      { off: [], warn: (m) => warnings.push(m) },
    ) as unknown as {
      created(b: ServiceBroker): void;
      started(): void;
      stopped(): void;
      remoteAction(next: Next): Next;
      transitPublish(next: (packet: Packet) => Promise<unknown>): (packet: Packet) => Promise<unknown>;
    };
    mw.created(fake.broker);
    mw.started();
    /**
     * A call to `nodeID` as Moleculer makes it: through the hook, then pending until answered. `sent`
     * says whether it left; `failed`, the error the hook answered it with instead.
     */
    const send = (id: string, nodeID: string, timeout = 10_000, params: unknown = {}) => {
      const outcome = {
        rejected: null as Error | null,
        sent: false,
        sends: 0,
        failed: null as Error | null,
      };
      const ctx = { id, nodeID, action: { name: "auth.verifyApiKey" }, options: { timeout }, params };
      // As Moleculer's transit does: the call's promise settles when its answer comes, or is rejected.
      mw.remoteAction(
        () =>
          new Promise((_resolve, reject) => {
            outcome.sent = true;
            outcome.sends++;
            fake.pendingRequests.set(id, {
              nodeID,
              action: ctx.action,
              reject: (err) => {
                outcome.rejected = err;
                reject(err);
              },
            });
          }),
      )(ctx).catch((err: Error) => (outcome.failed = err));
      return outcome;
    };
    /** A packet this node publishes: `sent` once it reached the transporter. */
    const publish = (packet: Packet) => {
      const outcome = { sent: false };
      void mw.transitPublish(async () => {
        outcome.sent = true;
      })(packet);
      return outcome;
    };
    return { ...fake, send, publish, stop: () => mw.stopped() };
  }

  it("when this node's connection comes back, then it announces itself and asks for everyone's INFO, once", async () => {
    const fake = start([]);
    fake.status.push("disconnect");
    await settle();
    expect(fake.announced).toEqual([]);

    fake.status.push("reconnect");
    await settle();
    await settle();
    expect(fake.announced).toEqual(["INFO", "DISCOVER"]);
    // Moleculer's own `$transporter.connected` never comes for it (nats 2.x): this event says it.
    expect(fake.localEvents).toEqual([NATS_RECONNECTED_EVENT]);
    fake.stop();
  });

  it("when this node was away from NATS, then it answers a probe with the span of that outage", async () => {
    const fake = start([]);
    expect(fake.probeMe()).toBeUndefined();
    const t0 = Date.now();
    fake.status.push("disconnect");
    await settle();
    await new Promise((r) => setTimeout(r, 15));
    fake.status.push("reconnect");
    await settle();
    const outage = outageOf(fake.probeMe()!);
    expect(outage!.from).toBeGreaterThanOrEqual(t0);
    expect(outage!.to - outage!.from).toBeGreaterThanOrEqual(10);
    expect(outage!.to).toBeLessThanOrEqual(Date.now());
    fake.stop();
  });

  it("when an INFO arrives from a node still counted as available, then it counts as a heartbeat", () => {
    const old = now() - 30;
    const auth: FakeNode = { id: "auth-1", available: true, instanceID: "a", lastHeartbeatTime: old };
    const fake = start([auth]);
    fake.emit("$node.updated", { node: auth });
    expect(auth.lastHeartbeatTime).toBeGreaterThanOrEqual(now() - 1);
    fake.stop();
  });

  it("when an INFO arrives from a node already dropped, then the middleware leaves its clock to Moleculer's reconnect", () => {
    const old = now() - 30;
    const auth: FakeNode = { id: "auth-1", available: false, instanceID: "a", lastHeartbeatTime: old };
    const fake = start([auth]);
    fake.emit("$node.updated", { node: auth });
    expect(auth.lastHeartbeatTime).toBe(old);
    fake.stop();
  });

  it("when a probed node answers that it was away from NATS, then the calls sent to it meanwhile (which never reached it) are sent again at once, whatever the action, and the others wait", async () => {
    const auth: FakeNode = {
      id: "auth-1",
      available: true,
      instanceID: "a",
      lastHeartbeatTime: now(),
      metadata: { liveProbe: true },
    };
    let away: Outage | null = null;
    const fake = start([auth], () => (away ? encodeOutage(away) : new Uint8Array(0)));
    const before = fake.send("sent-before", "auth-1");
    await new Promise((r) => setTimeout(r, 20));
    const from = Date.now();
    const during = fake.send("sent-while-away", "auth-1");
    const to = Date.now();
    await new Promise((r) => setTimeout(r, 20));
    // auth says it was away exactly while the second call left (the first left 20 ms before).
    away = { from, to };
    const after = fake.send("sent-after", "auth-1");
    await new Promise((r) => setTimeout(r, 60));

    // Taken back from transit, then sent again under the same id; its caller saw no error.
    expect(during.rejected?.name).toBe("RequestRejectedError");
    expect(during.sends).toBe(2);
    expect(during.failed).toBeNull();
    expect([before.sends, after.sends]).toEqual([1, 1]);
    expect(before.rejected).toBeNull();
    expect(after.rejected).toBeNull();
    expect([...fake.pendingRequests.keys()].sort()).toEqual(["sent-after", "sent-before", "sent-while-away"]);
    fake.stop();
  });

  it("when a call proved undelivered carries a stream (its chunks already read), then it is not sent again but fails retryable", async () => {
    const auth: FakeNode = {
      id: "auth-1",
      available: true,
      instanceID: "a",
      lastHeartbeatTime: now(),
      metadata: { liveProbe: true },
    };
    const fake = start([auth], () => encodeOutage({ from: Date.now() - 1000, to: Date.now() + 1000 }));
    const upload = fake.send("upload", "auth-1", 10_000, { pipe: () => undefined });
    await new Promise((r) => setTimeout(r, 60));
    expect(upload.sends).toBe(1);
    expect(upload.failed?.name).toBe("RequestRejectedError");
    fake.stop();
  });

  const probed = (id: string): FakeNode => ({
    id,
    available: true,
    instanceID: "a",
    lastHeartbeatTime: now(),
    metadata: { liveProbe: true },
  });
  const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it("when this node's connection is down, then a call is held, and goes out once the connection is back and its callee has announced itself", async () => {
    const auth = probed("auth-1");
    const fake = start([auth]);
    fake.status.push("disconnect");
    await settle();
    const call = fake.send("held", "auth-1");
    await wait(20);
    expect(call.sent).toBe(false);

    fake.status.push("reconnect");
    await wait(20);
    // Back, but auth has not said it is: its subscriptions may not be on the server yet.
    expect(call.sent).toBe(false);
    fake.emit("$node.updated", { node: auth });
    await settle();
    expect(call.sent).toBe(true);
    expect(call.failed).toBeNull();
    fake.stop();
  });

  it("when a call's deadline comes before NATS is back, then it fails with a 503 instead of a timeout, never sent", async () => {
    const fake = start([probed("auth-1")]);
    fake.status.push("disconnect");
    await settle();
    const call = fake.send("held", "auth-1", 150);
    while (!call.failed) await wait(10);
    expect(call.sent).toBe(false);
    expect(call.failed).toMatchObject({ name: "NatsUnavailableError", code: 503, retryable: false });
    fake.stop();
  });

  it("when the callee is dropped from the registry while a call waits for it, then the call fails retryable, so it goes to another instance", async () => {
    const auth = probed("auth-1");
    const fake = start([auth]);
    fake.status.push("disconnect");
    await settle();
    const call = fake.send("held", "auth-1");
    fake.raw.registry.nodes.disconnected("auth-1");
    await settle();
    expect(call.sent).toBe(false);
    expect(call.failed).toMatchObject({ name: "RequestRejectedError", retryable: true });
    fake.stop();
  });

  it("when a node without the probe (an older version) is called after the connection is back, then the call is not held for its announcement", async () => {
    const old: FakeNode = { id: "auth-1", available: true, instanceID: "a", lastHeartbeatTime: now() };
    const fake = start([old]);
    fake.status.push("disconnect");
    await settle();
    const call = fake.send("held", "auth-1");
    fake.status.push("reconnect");
    await wait(20);
    expect(call.sent).toBe(true);
    fake.stop();
  });

  it("when this node is deaf (its connection down), then no other node's heartbeat clock runs out meanwhile, and each gets a fresh one when it is back", async () => {
    const auth = probed("auth-1");
    const fake = start([auth]);
    fake.status.push("disconnect");
    await settle();
    auth.lastHeartbeatTime = now() - 30;
    await wait(20);
    expect(auth.lastHeartbeatTime).toBeGreaterThanOrEqual(now() - 1);
    auth.lastHeartbeatTime = now() - 30;
    fake.status.push("reconnect");
    await settle();
    expect(auth.lastHeartbeatTime).toBeGreaterThanOrEqual(now() - 1);
    fake.stop();
  });

  it("when a node not heard from since the outage answers no probe (not back yet), then it is not dropped for it", async () => {
    const auth = probed("auth-1");
    const fake = start([auth]);
    const noResponders = Object.assign(new Error("503"), { code: "503" });
    fake.raw.transit.tx.client.request = async () => {
      throw noResponders;
    };
    fake.status.push("disconnect");
    await settle();
    fake.status.push("reconnect");
    await wait(30);
    const after = fake.send("after", "auth-1");
    await wait(30);
    expect(auth.available).toBe(true);
    expect(after.sent).toBe(false);
    fake.stop();
  });

  it("when this node's connection is down, then an answer it has to send is held, and goes out once it is back and its caller has announced itself; other packets are not held", async () => {
    const gateway = probed("gateway-2");
    const fake = start([gateway]);
    fake.status.push("disconnect");
    await settle();
    const answer = fake.publish({ type: "RES", target: "gateway-2" });
    const beat = fake.publish({ type: "HEARTBEAT", target: null });
    await settle();
    expect(beat.sent).toBe(true);
    fake.status.push("reconnect");
    await wait(20);
    expect(answer.sent).toBe(false);
    fake.emit("$node.updated", { node: gateway });
    await settle();
    expect(answer.sent).toBe(true);
    fake.stop();
  });

  it("when a call was pending as the connection dropped, then once back it waits for its callee's announcement and the answer held there, and only a call still unanswered after that is retried", async () => {
    const auth = probed("auth-1");
    const fake = start([auth], undefined, [], { settleMs: 40 });
    const answered = fake.send("answered", "auth-1");
    const lost = fake.send("lost", "auth-1");
    fake.status.push("disconnect");
    await settle();
    fake.status.push("reconnect");
    await wait(60);
    // auth has not announced itself: both still wait.
    expect([answered.rejected, lost.rejected]).toEqual([null, null]);
    fake.emit("$node.updated", { node: auth });
    // auth's held answer to the first arrives (Moleculer settles it and drops it from the pending).
    fake.pendingRequests.delete("answered");
    await wait(100);
    expect(answered.rejected).toBeNull();
    expect(lost.rejected?.name).toBe("RequestRejectedError");
    fake.stop();
  });

  it("when a call the broker repeats (a read) was pending as the connection dropped, then it is rejected as retryable as soon as the connection is back, for the broker to repeat it", async () => {
    const auth = probed("auth-1");
    const fake = start([auth]);
    (fake.raw.options as Record<string, unknown>).retryPolicy = { enabled: true, retries: 2 };
    const pending = fake.send("pending", "auth-1");
    fake.status.push("disconnect");
    await settle();
    fake.status.push("reconnect");
    await wait(20);
    expect(pending.rejected?.name).toBe("RequestRejectedError");
    fake.stop();
  });

  it("when a call was pending as the connection dropped and its callee has no probe (an older version holds no answers), then it is retried as soon as the connection is back", async () => {
    const old: FakeNode = { id: "auth-1", available: true, instanceID: "a", lastHeartbeatTime: now() };
    const fake = start([old]);
    const pending = fake.send("pending", "auth-1");
    fake.status.push("disconnect");
    await settle();
    fake.status.push("reconnect");
    await wait(20);
    expect(pending.rejected?.name).toBe("RequestRejectedError");
    fake.stop();
  });

  it("when a probe's answer is empty or not an outage, then it reports none", () => {
    const enc = (s: string) => new TextEncoder().encode(s);
    expect(outageOf(new Uint8Array(0))).toBeNull();
    expect(outageOf(enc("not json"))).toBeNull();
    expect(outageOf(enc('{"from":5}'))).toBeNull();
    expect(outageOf(enc('{"from":9,"to":5}'))).toBeNull();
    expect(outageOf(encodeOutage({ from: 5, to: 9 }))).toEqual({ from: 5, to: 9 });
  });
});

describe("liveness when Moleculer is not what it was written for", () => {
  type Mw = { created(b: ServiceBroker): void; started(): void; stopped(): void };
  const tick = () => new Promise((r) => setTimeout(r, 30));

  function startWith(fake: ReturnType<typeof fakeBroker>, off: string[] = []) {
    const warnings: string[] = [];
    const mw = LivenessMiddleware(
      { probeAfterMs: 0, tickMs: 5 },
      { off, warn: (m) => warnings.push(m) },
    ) as unknown as Mw;
    mw.created(fake.broker);
    mw.started();
    return { warnings, stop: () => mw.stopped() };
  }

  it("when a pending request no longer has the shape it reads, then its tick stops the middleware with one warning and never throws", async () => {
    const fake = fakeBroker([]);
    const run = startWith(fake);
    expect(fake.raw.metadata.liveProbe).toBe(true);
    fake.pendingRequests.set("odd", {} as never);
    await tick();
    await tick();
    expect(run.warnings).toHaveLength(1);
    expect(run.warnings[0]).toMatch(/Internals hook 'liveness' stopped \(a pending request without nodeID\)/);
    // It still answers probes (a plain NATS subscription), so nobody takes this node for dead.
    expect(fake.raw.metadata.liveProbe).toBe(true);
    run.stop();
  });

  it("when the pending requests are no longer a Map under a running middleware, then it stops with one warning", async () => {
    const fake = fakeBroker([]);
    const run = startWith(fake);
    (fake.raw.transit as { pendingRequests: unknown }).pendingRequests = {};
    await tick();
    expect(run.warnings).toHaveLength(1);
    expect(run.warnings[0]).toMatch(/'liveness' stopped/);
    run.stop();
  });

  it("when the registry has no discoverer, then the middleware stays off from the start, announces no probe and warns once", async () => {
    const fake = fakeBroker([]);
    delete (fake.raw.registry as { discoverer?: unknown }).discoverer;
    const run = startWith(fake);
    fake.status.push("reconnect");
    await tick();
    expect(fake.raw.metadata.liveProbe).toBeUndefined();
    expect(fake.announced).toEqual([]);
    expect(run.warnings).toEqual([
      expect.stringMatching(/'liveness' not applied \(moleculer .* lacks registry\.discoverer\)/),
    ]);
    run.stop();
  });

  it("when it is forced off, then it announces no probe, hooks nothing and says so once", async () => {
    const auth: FakeNode = { id: "auth-1", available: true, instanceID: "a", lastHeartbeatTime: 1 };
    const fake = fakeBroker([auth]);
    const run = startWith(fake, ["liveness"]);
    fake.emit("$node.updated", { node: auth });
    fake.status.push("reconnect");
    await tick();
    expect(auth.lastHeartbeatTime).toBe(1);
    expect(fake.raw.metadata.liveProbe).toBeUndefined();
    expect(fake.announced).toEqual([]);
    expect(run.warnings).toEqual([expect.stringMatching(/'liveness' not applied \(forced off/)]);
    run.stop();
  });
});
