/**
 * NATS is no open door (docs/decisions/0134-broker-and-store-credentials.md): in the cluster, whose
 * private NATS runs with the deployments' users and permissions (shared/ops/nats-auth.ts), a peer
 * without credentials cannot connect nor call an action, and a service's user reaches only the nodes of
 * the services it calls. Embedded there is no broker to reach: the suite runs in the cluster topology.
 */
import { connect, type NatsConnection } from "nats";
import { ServiceBroker } from "moleculer";
import { createBroker } from "../../app/broker";
import { brokerOptions } from "../../app/broker-options";
import { loadConfig } from "../../shared/config";
import { startSystem, testEnv, topology, type System } from "../support/system";

const inCluster = topology === "cluster" ? describe : describe.skip;

inCluster("NATS credentials and permissions", () => {
  let sys: System;
  const opened: Array<NatsConnection | ServiceBroker> = [];
  beforeAll(async () => {
    sys = await startSystem();
  }, 120_000);
  afterAll(async () => {
    for (const o of opened) await ("close" in o ? o.close() : o.stop()).catch(() => undefined);
    await sys?.stop();
  });

  const cluster = () => sys.cluster!;
  /** The configuration of a node of the cluster's namespace, with the given credentials (none by default). */
  const peerConfig = (env: Record<string, string>) =>
    loadConfig(
      testEnv({
        TRANSPORTER: cluster().nats.url,
        NAMESPACE: cluster().namespace,
        REQUEST_TIMEOUT_MS: "2000",
        ...env,
      }),
    );
  /** A bare Moleculer node of the cluster's namespace. */
  const peer = (env: Record<string, string>) => {
    const broker = createBroker(peerConfig(env), []);
    opened.push(broker);
    return broker;
  };

  it("when a client connects to NATS without credentials, or with a wrong password, then it is refused", async () => {
    await expect(connect({ servers: cluster().nats.url, reconnect: false })).rejects.toMatchObject({
      code: "AUTHORIZATION_VIOLATION",
    });
    await expect(
      connect({ servers: cluster().nats.url, user: "auth", pass: "pwrong", reconnect: false }),
    ).rejects.toMatchObject({ code: "AUTHORIZATION_VIOLATION" });
  });

  it("when a Moleculer node without credentials calls auth.issueTokens, then it never reaches auth", async () => {
    // A bare broker that tries its refused connection once: Moleculer 0.14 schedules a retry 5 s after
    // each refusal and keeps retrying after a stop (its transit clears `disconnecting` once stopped),
    // so a retrying one would outlive this suite.
    const broker = new ServiceBroker({
      ...brokerOptions(peerConfig({ LOG_LEVEL: "fatal" })),
      transit: { disableReconnect: true },
    });
    opened.push(broker);
    // Its connection is refused; it sees no other node.
    void broker.start().catch(() => undefined);
    await new Promise((r) => setTimeout(r, 3000));
    await expect(
      broker.call("auth.issueTokens", { user_id: sys.manifest.users.alice.id }),
    ).rejects.toMatchObject({
      name: "ServiceNotFoundError",
    });
    expect(broker.registry.nodes.toArray().filter((n: { local: boolean }) => !n.local)).toEqual([]);
  });

  it("when the notifier's user calls auth's node, then NATS drops the call, while the users service it calls answers", async () => {
    const broker = peer(cluster().nats.credentials("notifier"));
    await broker.start();
    await broker.waitForServices(["auth", "users"], 10_000);
    // `$node` actions would be answered by this very node: the calls go to the services' own actions.
    await expect(broker.call("users.status", { id: sys.manifest.users.alice.id })).resolves.toEqual({
      exists: true,
      removed: false,
    });
    await expect(
      broker.call("auth.issueTokens", { user_id: sys.manifest.users.alice.id }),
    ).rejects.toMatchObject({ name: "RequestTimeoutError" });
    // The same call from a node NATS lets reach auth (the operations CLI's user) is answered.
    const ops = peer(cluster().nats.credentials("ops"));
    await ops.start();
    await ops.waitForServices(["auth"], 10_000);
    await expect(
      ops.call("auth.issueTokens", { user_id: sys.manifest.users.alice.id }),
    ).resolves.toHaveProperty("access_token");
  }, 30_000);

  it("when the notifier's user subscribes to calls addressed to auth, then NATS refuses the subscription", async () => {
    const nc = await connect(cluster().nats.connectOptions("notifier"));
    opened.push(nc);
    const refused = new Promise<unknown>((resolve) => {
      nc.subscribe(`MOL-${cluster().namespace}.REQ.auth.>`, { callback: (err) => resolve(err) });
    });
    await expect(refused).resolves.toMatchObject({ code: "PERMISSIONS_VIOLATION" });
  });
});
