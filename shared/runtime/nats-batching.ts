/**
 * The NATS client writes what it has to send at the end of the current microtask queue: a process that
 * answers requests as they finish (after a cache or store round trip) makes one socket write, one
 * syscall and one packet for the server to parse, per answer. Flushing at `setImmediate` instead sends
 * everything queued during one turn of the event loop in one write; when idle, that turn ends at once,
 * so a lone request waits no longer. What it gains: docs/decisions/0103-internals-hooks-guard.md.
 *
 * nats.js has no option for this. The hook wraps two methods of its protocol handler: `sendCommand`,
 * which on an empty buffer asks for `flushPending` in a microtask, and `flushPending`, which runs that
 * one flush at the end of the turn instead. Every other flush (over the buffer's limit, a PING, after a
 * reconnect) runs at once, as nats.js does it.
 */
import { missingFunctions, unwrap, useHook, wrap, type InternalsHook } from "./internals";

/** The parts of nats.js's ProtocolHandler (not in its typings) the hook touches. */
interface ProtocolHandler {
  outbound: { length(): number };
  sendCommand(...args: unknown[]): void;
  flushPending(): void;
}

/** nats.js's protocol module (not exported by it): `{}` if this release has none where it used to be. */
interface ProtocolModule {
  ProtocolHandler?: { prototype: Pick<ProtocolHandler, "sendCommand" | "flushPending"> };
}

function protocolModule(): ProtocolModule {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require("nats/lib/nats-base-client/protocol") as ProtocolModule;
  } catch {
    return {};
  }
}

/** Handlers whose next flushPending is the one their sendCommand asked for in a microtask. */
const deferNext = new WeakSet<ProtocolHandler>();

export const natsBatchingHook: InternalsHook<ProtocolModule> = {
  name: "nats-batching",
  library: "nats",
  versions: ">=2.29.0 <3.0.0",
  check(protocol) {
    // `outbound` belongs to each connection: checked where it is read (below).
    return missingFunctions(protocol.ProtocolHandler?.prototype, "ProtocolHandler.prototype", [
      "sendCommand",
      "flushPending",
    ]);
  },
  apply(protocol) {
    const proto = protocol.ProtocolHandler!.prototype;
    wrap(
      proto,
      "sendCommand",
      (send) =>
        function sendCommand(this: ProtocolHandler, ...args: unknown[]) {
          const empty = typeof this.outbound?.length === "function" && this.outbound.length() === 0;
          // nats.js queues its flush in a microtask when the buffer was empty: these two microtasks
          // come right before and after it, so that flush, and only it, finds the mark.
          if (empty) queueMicrotask(() => deferNext.add(this));
          send.apply(this, args as never);
          if (empty) queueMicrotask(() => deferNext.delete(this));
        },
    );
    wrap(
      proto,
      "flushPending",
      (flushNow) =>
        function flushPending(this: ProtocolHandler) {
          if (!deferNext.has(this)) return flushNow.call(this);
          deferNext.delete(this);
          setImmediate(() => flushNow.call(this));
        },
    );
  },
  remove(protocol) {
    if (!protocol.ProtocolHandler) return;
    unwrap(protocol.ProtocolHandler.prototype, "flushPending");
    unwrap(protocol.ProtocolHandler.prototype, "sendCommand");
  },
};

/** The module the hook applies to (exported for its tests). */
export const natsProtocol = protocolModule();

/** Batches the writes of every NATS connection of this process, unless the hook is off or cannot apply. */
export function batchNatsWrites(off: readonly string[], warn?: (message: string) => void): boolean {
  return useHook(natsBatchingHook, natsProtocol, { off, warn });
}
