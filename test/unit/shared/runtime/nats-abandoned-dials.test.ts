/**
 * The nats-abandoned-dials hook (shared/runtime/nats-abandoned-dials) against the installed nats.js: a
 * transport closed while it connects (nats.js's dial timer won) to a server that answers late. Without
 * the hook the installed nats.js connects it anyway; the day it no longer does, the first test fails
 * and the hook can go.
 */
import net from "node:net";
import { reasonNotToApply, removeHook, useHook } from "../../../../shared/runtime/internals";
import { natsAbandonedDialsHook, natsTransport } from "../../../../shared/runtime/nats-abandoned-dials";

interface Transport {
  connected: boolean;
  socket?: net.Socket;
  connect(hp: { hostname: string; port: number }, options: object): Promise<void>;
  close(err?: Error): Promise<void>;
  closed(): Promise<unknown>;
}

const INFO =
  'INFO {"server_id":"t","version":"2.9.10","go":"go","host":"127.0.0.1","port":4222,"headers":true,"max_payload":1048576,"proto":1}\r\n';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("a NATS connection attempt given up while the server has not answered yet", () => {
  let server: net.Server;
  let port: number;
  const sockets: net.Socket[] = [];

  beforeAll(async () => {
    // A server that sends its INFO only after 300 ms, as one restarting or reached late does.
    server = net.createServer((s) => {
      sockets.push(s);
      s.on("error", () => undefined);
      setTimeout(() => !s.destroyed && s.write(INFO), 300);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as net.AddressInfo).port;
  });

  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });

  /** Starts connecting, closes the transport before the INFO comes, then waits past it. */
  async function attemptGivenUp() {
    const Transport = natsTransport.NodeTransport as unknown as new () => Transport;
    const t = new Transport();
    const connecting = t.connect({ hostname: "127.0.0.1", port }, {}).then(
      () => "connected",
      (err: Error) => `refused: ${err.message}`,
    );
    let closedNotified = false;
    void t.closed().then(() => (closedNotified = true));
    await sleep(50);
    await t.close(new Error("dial timeout"));
    const outcome = await connecting;
    await sleep(50);
    return { t, outcome, closedNotified };
  }

  it("when the hook is off, then the installed nats.js connects the given-up transport anyway (what the hook is for)", async () => {
    removeHook(natsAbandonedDialsHook, natsTransport);
    const { t, outcome } = await attemptGivenUp();
    try {
      expect(outcome).toBe("connected");
      expect(t.connected).toBe(true);
    } finally {
      t.socket?.destroy();
    }
  });

  describe("with the hook", () => {
    beforeAll(() => {
      expect(reasonNotToApply(natsAbandonedDialsHook, natsTransport, [])).toBeNull();
      expect(useHook(natsAbandonedDialsHook, natsTransport, { off: [] })).toBe(true);
    });
    afterAll(() => removeHook(natsAbandonedDialsHook, natsTransport));

    it("when the server answers after the attempt was given up, then the transport never connects, its socket is destroyed, and its close tells no one", async () => {
      const { t, outcome, closedNotified } = await attemptGivenUp();
      expect(outcome).toMatch(/^refused: NATS connection attempt given up/);
      expect(t.connected).toBe(false);
      expect(t.socket).toBeUndefined();
      expect(closedNotified).toBe(false);
    });

    it("when a connected transport is closed, then it closes as nats.js closes it", async () => {
      const Transport = natsTransport.NodeTransport as unknown as new () => Transport;
      const t = new Transport();
      await t.connect({ hostname: "127.0.0.1", port }, {});
      expect(t.connected).toBe(true);
      let closedNotified = false;
      void t.closed().then(() => (closedNotified = true));
      await t.close();
      await sleep(10);
      expect(closedNotified).toBe(true);
    });
  });
});
