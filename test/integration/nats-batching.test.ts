/**
 * The NATS client, as every broker of ours uses it over NATS: what is sent during one turn of the event
 * loop leaves in one socket write, and every message still arrives, in order.
 */
import { connect, StringCodec, type NatsConnection } from "nats";
import { removeHook, useHook } from "../../shared/runtime/internals";
import { batchNatsWrites, natsBatchingHook, natsProtocol } from "../../shared/runtime/nats-batching";
import { requireBinary, startNatsServer, type RunningBroker } from "../support/brokers";

const run = requireBinary("nats-server");
const maybe = run ? describe : describe.skip;

maybe("NATS writes batched per turn of the event loop", () => {
  let server: RunningBroker;
  let sender: NatsConnection;
  let receiver: NatsConnection;
  const codec = StringCodec();

  beforeAll(async () => {
    expect(batchNatsWrites([])).toBe(true);
    server = await startNatsServer();
    sender = await connect({ servers: server.url });
    receiver = await connect({ servers: server.url });
  }, 30_000);

  afterAll(async () => {
    removeHook(natsBatchingHook, natsProtocol);
    await sender?.close();
    await receiver?.close();
    await server?.stop();
  });

  const socketWrites = (nc: NatsConnection) => {
    const socket = (
      nc as unknown as { protocol: { transport: { socket: { write: (...a: unknown[]) => boolean } } } }
    ).protocol.transport.socket;
    return jest.spyOn(socket, "write");
  };

  /**
   * Publishes 50 messages one microtask apart on `subject` (answers that finish one after another within
   * a turn, as requests completing after an await do); how many socket writes carried them by the end of
   * the turn, and what arrived.
   */
  async function publishFifty(subject: string): Promise<{ writes: number; received: string[] }> {
    const sub = receiver.subscribe(subject, { max: 50 });
    await receiver.flush();
    const received = (async () => {
      const got: string[] = [];
      for await (const m of sub) got.push(codec.decode(m.data));
      return got;
    })();
    const writes = socketWrites(sender);
    try {
      for (let i = 0; i < 50; i++) {
        await Promise.resolve();
        sender.publish(subject, codec.encode(String(i)));
      }
      await new Promise((r) => setImmediate(r));
      return { writes: writes.mock.calls.length, received: await received };
    } finally {
      writes.mockRestore();
    }
  }

  const fifty = Array.from({ length: 50 }, (_, i) => String(i));

  it("when 50 messages are published one microtask apart, then they leave in one write and all arrive in order", async () => {
    const { writes, received } = await publishFifty("batching.test");
    expect(writes).toBe(1);
    expect(received).toEqual(fifty);
  });

  it("when a request is alone, with no other traffic to push it out, then its request and answer are still sent", async () => {
    const sub = receiver.subscribe("batching.echo");
    void (async () => {
      for await (const m of sub) m.respond(m.data);
    })();
    await receiver.flush();
    const reply = await sender.request("batching.echo", codec.encode("ping"), { timeout: 2_000 });
    expect(codec.decode(reply.data)).toBe("ping");
    sub.unsubscribe();
  });

  it("when the hook is off (nats.js's own flush per microtask), then the same 50 messages leave in several writes and all arrive in order", async () => {
    removeHook(natsBatchingHook, natsProtocol);
    try {
      const { writes, received } = await publishFifty("batching.off");
      expect(writes).toBeGreaterThan(1);
      expect(received).toEqual(fifty);
    } finally {
      expect(useHook(natsBatchingHook, natsProtocol, { off: [] })).toBe(true);
    }
  });
});
