/**
 * What the nats-batching hook needs of the installed nats.js (shared/runtime/nats-batching): its
 * protocol handler where the hook looks for it, a `sendCommand` that hands its flush to `flushPending`
 * (in a microtask on an empty buffer, or at once past the buffer limit), and the per-connection buffer
 * the wrapper reads. An upgrade of nats that changes any of them fails here.
 */
import { reasonNotToApply, removeHook, useHook } from "../../../../shared/runtime/internals";
import { natsBatchingHook, natsProtocol } from "../../../../shared/runtime/nats-batching";

interface Handler {
  outbound: { size(): number; length(): number; fill(b: Uint8Array): void };
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

  it("when a command is queued on an empty buffer, then nats.js flushes it through flushPending in the next microtask", async () => {
    const h = newHandler();
    const flushes: number[] = [];
    h.flushPending = () => flushes.push(h.outbound.size());
    expect(h.outbound.length()).toBe(0);
    h.sendCommand("PING\r\n");
    expect(h.outbound.length()).toBe(1);
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

    it("when a flush is asked for directly (a PING, a reconnect), then it leaves at once, as without the hook", async () => {
      h.sendCommand("PING\r\n");
      h.outbound.fill(new TextEncoder().encode("PING\r\n"));
      h.flushPending();
      expect(sent).toEqual([12]);
      await new Promise((r) => setImmediate(r));
      expect(sent).toEqual([12]);
    });

    it("when the hook is removed, then each command leaves in its own microtask again", async () => {
      removeHook(natsBatchingHook, natsProtocol);
      try {
        h.sendCommand("PING\r\n");
        await Promise.resolve();
        h.sendCommand("PONG\r\n");
        await Promise.resolve();
        expect(sent).toEqual([6, 6]);
      } finally {
        expect(useHook(natsBatchingHook, natsProtocol, { off: [] })).toBe(true);
      }
    });

    it("when the buffer reaches the connection's limit, then it leaves at once, as without the hook", () => {
      h.pendingLimit = 8;
      h.sendCommand("PING\r\n");
      h.sendCommand("PONG\r\n");
      expect(sent).toEqual([12]);
    });
  });
});
