/**
 * The liveness middleware around a NATS outage: a reconnected node is heard from at once (Moleculer's
 * transporter announces it only with the nats 1.x client), and an INFO counts as a heartbeat.
 */
import type { ServiceBroker } from "moleculer";
import { encodeOutage, LivenessMiddleware, outageOf, type Outage } from "../../shared/runtime/liveness";

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
  const broker = {
    nodeID: "gateway-1",
    metadata: {} as Record<string, unknown>,
    localBus: {
      on: (event: string, fn: (p: unknown) => void) =>
        listeners.set(event, [...(listeners.get(event) ?? []), fn]),
    },
    getLogger: () => ({ warn: () => undefined }),
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
        localNode: { id: "gateway-1", local: true, lastHeartbeatTime: Math.round(process.uptime()) },
        get: (id: string) => nodes.find((n) => n.id === id),
        disconnected: (id: string) => {
          const node = nodes.find((n) => n.id === id);
          if (node) node.available = false;
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
    emit,
    pendingRequests,
    probeMe,
  };
}

const now = () => Math.round(process.uptime());
const settle = () => new Promise((r) => setImmediate(r));

describe("liveness after a NATS outage", () => {
  type Next = (ctx: { id: string }) => Promise<unknown>;
  function start(nodes: FakeNode[], probeAnswer?: () => Uint8Array, warnings: string[] = []) {
    const fake = fakeBroker(nodes, probeAnswer);
    // Probing at once and often: this suite is about what a probe's answer leads to, not its timing.
    const mw = LivenessMiddleware(
      { probeAfterMs: 0, tickMs: 5 },
      { off: [], warn: (m) => warnings.push(m) },
    ) as unknown as {
      created(b: ServiceBroker): void;
      started(): void;
      stopped(): void;
      remoteAction(next: Next): Next;
    };
    mw.created(fake.broker);
    mw.started();
    /** A call to `nodeID` as Moleculer makes it: through the hook, then pending until answered. */
    const send = (id: string, nodeID: string) => {
      const outcome = { rejected: null as Error | null };
      void mw.remoteAction(async () => {
        fake.pendingRequests.set(id, {
          nodeID,
          action: { name: "auth.verifyApiKey" },
          reject: (err) => (outcome.rejected = err),
        });
      })({ id });
      return outcome;
    };
    return { ...fake, send, stop: () => mw.stopped() };
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

  it("when a probed node answers that it was away from NATS, then the calls sent to it meanwhile are retried at once and the others wait", async () => {
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
    const during = fake.send("sent-while-away", "auth-1");
    await new Promise((r) => setTimeout(r, 20));
    away = { from: Date.now() - 30, to: Date.now() - 5 };
    const after = fake.send("sent-after", "auth-1");
    await new Promise((r) => setTimeout(r, 60));

    expect(during.rejected?.name).toBe("RequestRejectedError");
    expect(fake.pendingRequests.has("sent-while-away")).toBe(false);
    expect(before.rejected).toBeNull();
    expect(after.rejected).toBeNull();
    expect([...fake.pendingRequests.keys()].sort()).toEqual(["sent-after", "sent-before"]);
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
