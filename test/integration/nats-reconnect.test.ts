/**
 * A NATS reconnect as Moleculer's transporter sees it (shared/runtime/nats-transporter), over a private
 * nats-server killed and started again. Moleculer 0.14's own NATS transporter only logs a nats.js 2.x
 * reconnect: the first test proves it still does with the installed versions; the day it fails, Moleculer
 * handles the reconnect itself and the subclass can go (docs/decisions/0042-nats-outage.md).
 */
import { Errors, ServiceBroker, Transporters, type Context, type Transporter } from "moleculer";
import { CallsAcrossLossMiddleware } from "../../shared/runtime/nats-calls-across-loss";
import { ReconnectAwareDiscoverer } from "../../shared/runtime/nats-discoverer";
import { ReconnectingNatsTransporter } from "../../shared/runtime/nats-transporter";
import { requireBinary, startNatsServer, type RunningBroker } from "../support/brokers";

const run = requireBinary("nats-server");
const maybe = run ? describe : describe.skip;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A broker whose `$transporter.connected` events once started are listed, with an `echo` service (`say`
 * answers at once, `slowly` after 9 s) or none; with the subclass, with the middleware for calls in
 * flight at a loss and the discoverer that does not hold this node's own outage against its peers, as
 * app/broker-options.ts gives them.
 */
function brokerWith(nodeID: string, transporter: Transporter, echo: boolean) {
  const connected: boolean[] = [];
  const ours = transporter instanceof ReconnectingNatsTransporter;
  const broker = new ServiceBroker({
    nodeID,
    transporter,
    middlewares: ours ? [CallsAcrossLossMiddleware(transporter)] : [],
    registry: ours ? { discoverer: new ReconnectAwareDiscoverer(transporter) } : {},
    logger: false,
    heartbeatInterval: 1,
    heartbeatTimeout: 2,
  });
  broker.createService({
    name: echo ? "echo" : `watch-${nodeID}`,
    actions: echo
      ? {
          say: (ctx: Context<{ word: string }>) => ctx.params.word,
          slowly: () => sleep(9000).then(() => "late"),
        }
      : {},
    events: {
      "$transporter.connected"(ctx: Context<{ wasReconnect: boolean }>) {
        connected.push(ctx.params.wasReconnect);
      },
    },
  });
  return { broker, connected, transporter };
}

maybe("a NATS server restarted under Moleculer's transporter", () => {
  let server: RunningBroker;
  const brokers: ServiceBroker[] = [];

  beforeAll(async () => {
    server = await startNatsServer();
  }, 30_000);
  afterEach(async () => {
    await Promise.all(brokers.splice(0).map((b) => b.stop()));
  });
  afterAll(() => server?.stop());

  /** Two brokers over `make()`'s transporters, started; the caller has none of the service. */
  async function pair(make: () => Transporter) {
    const callee = brokerWith("callee", make(), true);
    const caller = brokerWith("caller", make(), false);
    brokers.push(callee.broker, caller.broker);
    await Promise.all([callee.broker.start(), caller.broker.start()]);
    await caller.broker.waitForServices("echo", 10_000);
    return { callee, caller };
  }

  it("when the server comes back, then Moleculer's own NATS transporter (nats 2.x) never says it is connected again", async () => {
    const { caller } = await pair(() => new Transporters.NATS({ servers: [`127.0.0.1:${server.port}`] }));
    await server.restart(1000);
    await sleep(4000);
    expect(caller.connected).toEqual([]);
  }, 30_000);

  it("when the server comes back, then the subclass says so as Moleculer does for nats 1.x, and a call made while it was away is answered", async () => {
    const { callee, caller } = await pair(
      () => new ReconnectingNatsTransporter({ servers: [`127.0.0.1:${server.port}`] }),
    );
    const restart = server.restart(1000);
    const tx = caller.transporter as ReconnectingNatsTransporter;
    // Sent once the caller knows its connection is down: held, then sent once caller and callee are back.
    for (const until = Date.now() + 3000; tx.connected && Date.now() < until;) await sleep(10);
    expect(tx.connected).toBe(false);
    const answer = caller.broker.call("echo.say", { word: "held" }, { timeout: 8000, retries: 0 });
    await restart;
    await expect(answer).resolves.toBe("held");
    // Each says so once its transit has announced it again, on its own reconnect's schedule.
    const bothSaid = () => caller.connected.length > 0 && callee.connected.length > 0;
    for (const until = Date.now() + 5000; !bothSaid() && Date.now() < until;) await sleep(100);
    expect(caller.connected).toEqual([true]);
    expect(callee.connected).toEqual([true]);
    // Both stay in each other's registry: neither was dropped for the beats missed meanwhile.
    await sleep(3000);
    await expect(
      caller.broker.call("echo.say", { word: "after" }, { timeout: 2000, retries: 0 }),
    ).resolves.toBe("after");
  }, 30_000);

  it("when the connection drops while a call is in flight, then the call is rejected as retryable a second after its callee is back, not left to its timeout", async () => {
    const { caller } = await pair(
      () => new ReconnectingNatsTransporter({ servers: [`127.0.0.1:${server.port}`] }),
    );
    const sentAt = Date.now();
    const answer = caller.broker.call("echo.slowly", {}, { timeout: 20_000, retries: 0 }).then(
      () => null,
      (err: Error) => err,
    );
    await sleep(200);
    await server.restart(1000);
    const err = await answer;
    expect(err).toBeInstanceOf(Errors.RequestRejectedError);
    expect((err as Errors.MoleculerError).retryable).toBe(true);
    // Back within nats.js's reconnect wait (2 s) and a second more: well before the answer (9 s).
    expect(Date.now() - sentAt).toBeLessThan(7000);
  }, 30_000);
});
