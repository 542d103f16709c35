/**
 * What the liveness middleware (shared/runtime/liveness) needs of the installed Moleculer, none of it
 * documented: checked on real brokers (two of them over Moleculer's in-memory Fake transporter). An
 * upgrade of Moleculer that renames or reshapes any of it fails here, before the middleware meets it.
 */
import { ServiceBroker } from "moleculer";
import { reasonNotToApply } from "../../../../shared/runtime/internals";
import { LivenessMiddleware, livenessNeeds } from "../../../../shared/runtime/liveness";

const hookOf = () =>
  ({
    name: "liveness",
    library: "moleculer",
    versions: ">=0.14.0 <0.15.0",
    check: livenessNeeds,
    apply: () => undefined,
    remove: () => undefined,
  }) as const;

describe("the liveness middleware against the installed Moleculer", () => {
  it("when a broker with a NATS transporter is created, then it is in the middleware's versions and has every internal it touches", async () => {
    const broker = new ServiceBroker({ transporter: "nats://127.0.0.1:4222", logger: false });
    expect(livenessNeeds(broker)).toEqual([]);
    expect(reasonNotToApply(hookOf(), broker, [])).toBeNull();
  });

  it("when a broker has no transporter, then the check says so", () => {
    const broker = new ServiceBroker({ logger: false });
    expect(livenessNeeds(broker)).toEqual(["a transporter (broker.transit)"]);
  });

  it("when the middleware is created on a broker, then the node's metadata (sent in its INFO) announces liveProbe, and not when forced off", () => {
    const nats = "nats://127.0.0.1:4222";
    const on = new ServiceBroker({ transporter: nats, logger: false, middlewares: [LivenessMiddleware()] });
    const off = new ServiceBroker({
      transporter: nats,
      logger: false,
      middlewares: [LivenessMiddleware({}, { off: ["liveness"], warn: () => undefined })],
    });
    expect(on.metadata).toEqual({ liveProbe: true });
    expect(off.metadata).toEqual({});
  });

  describe("a call pending on another node", () => {
    let caller: ServiceBroker;
    let callee: ServiceBroker;
    let release: () => void = () => undefined;

    beforeAll(async () => {
      caller = new ServiceBroker({ nodeID: "caller", transporter: "Fake", logger: false });
      callee = new ServiceBroker({ nodeID: "callee", transporter: "Fake", logger: false });
      callee.createService({
        name: "slow",
        actions: { wait: () => new Promise<void>((r) => (release = r)) },
      });
      await Promise.all([caller.start(), callee.start()]);
      await caller.waitForServices(["slow"], 5000);
    });
    afterAll(async () => {
      release();
      await Promise.all([caller.stop(), callee.stop()]);
    });

    it("when it waits, then transit holds it with the node, the action's name and reject, and the registry the node's heartbeat clock", async () => {
      const call = caller.call("slow.wait");
      await new Promise((r) => setTimeout(r, 50));
      const pending = [...caller.transit!.pendingRequests.values()] as unknown as Array<{
        nodeID: unknown;
        action: { name?: unknown };
        reject: unknown;
      }>;
      expect(pending).toHaveLength(1);
      expect(pending[0].nodeID).toBe("callee");
      expect(pending[0].action.name).toBe("slow.wait");
      expect(typeof pending[0].reject).toBe("function");
      const node = caller.registry.nodes.get("callee") as unknown as {
        lastHeartbeatTime: number;
        instanceID: string;
      };
      // Whole seconds of process.uptime(), the clock the middleware writes when it hears from a node.
      expect(Math.abs(node.lastHeartbeatTime - Math.round(process.uptime()))).toBeLessThanOrEqual(2);
      expect(typeof node.instanceID).toBe("string");
      release();
      await call;
    });

    it("when the registry is told the node is gone, then it is unavailable and its pending calls fail retryable", async () => {
      const call = caller.call("slow.wait", {}, { retries: 0 });
      await new Promise((r) => setTimeout(r, 50));
      const nodes = caller.registry.nodes as unknown as {
        disconnected(id: string, unexpected: boolean): void;
      };
      nodes.disconnected("callee", true);
      await expect(call).rejects.toMatchObject({ retryable: true });
      expect(caller.registry.nodes.get("callee")?.available).toBe(false);
      // The node comes back with its next INFO, as after a probe's false alarm.
      const registry = caller.registry as unknown as {
        discoverer: { sendLocalNodeInfo(): Promise<unknown>; discoverAllNodes(): Promise<unknown> };
      };
      await registry.discoverer.discoverAllNodes();
      const deadline = Date.now() + 5000;
      while (!caller.registry.nodes.get("callee")?.available && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      expect(caller.registry.nodes.get("callee")?.available).toBe(true);
      await registry.discoverer.sendLocalNodeInfo();
    });
  });
});
