/**
 * The liveness middleware around a NATS outage: a reconnected node is heard from at once (Moleculer's
 * transporter announces it only with the nats 1.x client), and an INFO counts as a heartbeat.
 */
import type { ServiceBroker } from "moleculer";
import { LivenessMiddleware } from "../../shared/runtime/liveness";

interface FakeNode {
  id: string;
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

function fakeBroker(nodes: FakeNode[]) {
  const status = statusStream();
  const listeners = new Map<string, ((p: unknown) => void)[]>();
  const announced: string[] = [];
  const broker = {
    nodeID: "gateway-1",
    localBus: {
      on: (event: string, fn: (p: unknown) => void) =>
        listeners.set(event, [...(listeners.get(event) ?? []), fn]),
    },
    getLogger: () => ({ warn: () => undefined }),
    transit: {
      pendingRequests: new Map(),
      tx: {
        prefix: "MOL",
        client: { request: async () => undefined, status: () => status, subscribe: () => undefined },
      },
    },
    registry: {
      nodes: {
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
  return { broker: broker as unknown as ServiceBroker, status, announced, emit };
}

const now = () => Math.round(process.uptime());
const settle = () => new Promise((r) => setImmediate(r));

describe("liveness after a NATS outage", () => {
  function start(nodes: FakeNode[]) {
    const fake = fakeBroker(nodes);
    const mw = LivenessMiddleware() as unknown as {
      created(b: ServiceBroker): void;
      started(): void;
      stopped(): void;
    };
    mw.created(fake.broker);
    mw.started();
    return { ...fake, stop: () => mw.stopped() };
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
});
