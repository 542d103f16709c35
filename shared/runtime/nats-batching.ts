/**
 * The NATS client writes what it has to send at the end of the current microtask queue: a process that
 * answers requests as they finish (after a cache or store round trip) makes one socket write, one
 * syscall and one packet for the server to parse, per answer. Under load that was the largest single
 * cost of the gateway and of the rounds service serving reads (docs/decisions/0069-one-write-per-turn.md).
 * Flushing at `setImmediate` instead sends everything queued during one turn of the
 * event loop in one write; when idle, that turn ends at once, so a lone request waits no longer.
 *
 * nats.js has no option for this; `ProtocolHandler.prototype.sendCommand` is replaced, for every
 * connection in the process, by a method of our own (it does not call the original, so a change to the
 * client's method is not picked up). A buffer above the client's own limit is still flushed inline, as
 * before.
 */
// nats.js does not export its protocol handler in its typings.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const protocol = require("nats/lib/nats-base-client/protocol") as {
  ProtocolHandler: { prototype: ProtocolHandler };
};

interface ProtocolHandler {
  outbound: { fill(buf: Uint8Array, ...more: Uint8Array[]): void; length(): number; size(): number };
  pendingLimit: number;
  flushPending(): void;
  sendCommand(cmd: string | Uint8Array, ...payloads: Uint8Array[]): void;
}

const encoder = new TextEncoder();
let installed = false;

export function batchNatsWrites(): void {
  if (installed) return;
  installed = true;
  protocol.ProtocolHandler.prototype.sendCommand = function sendCommand(
    this: ProtocolHandler,
    cmd: string | Uint8Array,
    ...payloads: Uint8Array[]
  ) {
    const wasEmpty = this.outbound.length() === 0;
    this.outbound.fill(typeof cmd === "string" ? encoder.encode(cmd) : cmd, ...payloads);
    if (wasEmpty) setImmediate(() => this.flushPending());
    else if (this.outbound.size() >= this.pendingLimit) this.flushPending();
  };
}
