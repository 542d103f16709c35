/**
 * What the nats-batching hook needs of the installed nats.js (shared/runtime/nats-batching): its
 * protocol handler where the hook looks for it, a `sendCommand` that hands its flush to `flushPending`
 * (in a microtask, or at once past the buffer limit), and the per-connection buffer and limit the
 * wrapper reads. An upgrade of nats that changes any of them fails here.
 */
import { reasonNotToApply, removeHook, useHook } from "../../shared/runtime/internals";
import { natsBatchingHook, natsProtocol } from "../../shared/runtime/nats-batching";

interface Handler {
  outbound: { size(): number };
  pendingLimit: number;
  sendCommand(cmd: string): void;
  flushPending(): void;
}

const newHandler = (): Handler => {
  const Protocol = natsProtocol.ProtocolHandler as unknown as new (
    options: object,
    publisher: object,
  ) => Handler;
  return new Protocol({ servers: "127.0.0.1:4222" }, {});
};

describe("the nats-batching hook against the installed nats", () => {
  it("when the installed nats is checked, then it is in the hook's versions and has what the hook wraps", () => {
    expect(reasonNotToApply(natsBatchingHook, natsProtocol, [])).toBeNull();
  });

  it("when a command is queued on an empty buffer, then nats.js flushes it through flushPending in a microtask", async () => {
    const h = newHandler();
    const flushes: number[] = [];
    h.flushPending = () => flushes.push(h.outbound.size());
    h.sendCommand("PING\r\n");
    expect(flushes).toEqual([]);
    await Promise.resolve();
    expect(flushes).toEqual([6]);
  });

  it("when the buffer reaches the connection's limit, then nats.js calls flushPending at once", () => {
    const h = newHandler();
    expect(typeof h.pendingLimit).toBe("number");
    h.pendingLimit = 8;
    const flushes: number[] = [];
    h.flushPending = () => flushes.push(h.outbound.size());
    h.sendCommand("PING\r\n");
    h.sendCommand("PONG\r\n");
    expect(flushes).toEqual([12]);
  });

  describe("with the hook applied", () => {
    const sent: number[] = [];
    let h: Handler;

    beforeAll(() => {
      expect(useHook(natsBatchingHook, natsProtocol, { off: [] })).toBe(true);
    });
    afterAll(() => removeHook(natsBatchingHook, natsProtocol));

    beforeEach(() => {
      sent.length = 0;
      h = newHandler();
      // The client's own flush drains the buffer into the transport once connected.
      Object.assign(h, {
        infoReceived: true,
        connected: true,
        transport: { send: (d: Uint8Array) => sent.push(d.length) },
      });
    });

    it("when commands are queued a microtask apart, then they leave together at the end of the turn", async () => {
      for (let i = 0; i < 5; i++) {
        await Promise.resolve();
        h.sendCommand("PING\r\n");
      }
      await Promise.resolve();
      expect(sent).toEqual([]);
      await new Promise((r) => setImmediate(r));
      expect(sent).toEqual([30]);
    });

    it("when the buffer reaches the connection's limit, then it leaves at once, as without the hook", () => {
      h.pendingLimit = 8;
      h.sendCommand("PING\r\n");
      h.sendCommand("PONG\r\n");
      expect(sent).toEqual([12]);
    });
  });
});
