/**
 * The NATS client writes what it has to send at the end of the current microtask queue: a process that
 * answers requests as they finish (after a cache or store round trip) makes one socket write, one
 * syscall and one packet for the server to parse, per answer. Flushing at `setImmediate` instead sends
 * everything queued during one turn of the event loop in one write; when idle, that turn ends at once,
 * so a lone request waits no longer. What it gains: docs/architecture.md, "Hooks into other libraries'
 * internals".
 *
 * nats.js has no option for this. The hook wraps the protocol handler's `flushPending` (which its
 * `sendCommand` calls in a microtask, or at once when the buffer passes the client's limit): below that
 * limit the client's own flush runs once at the end of the turn; at or above it, at once, as before.
 */
import { missingFunctions, unwrap, useHook, wrap, type InternalsHook } from "./internals";

/** The parts of nats.js's ProtocolHandler (not in its typings) the hook touches. */
interface ProtocolHandler {
  outbound: { size(): number };
  pendingLimit: number;
  flushPending(): void;
}

/** nats.js's protocol module (not exported by it): `{}` if this release has none where it used to be. */
interface ProtocolModule {
  ProtocolHandler?: { prototype: { flushPending: ProtocolHandler["flushPending"] } };
}

function protocolModule(): ProtocolModule {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require("nats/lib/nats-base-client/protocol") as ProtocolModule;
  } catch {
    return {};
  }
}

/** Handlers with a flush waiting for the end of the turn. */
const scheduled = new WeakSet<ProtocolHandler>();

export const natsBatchingHook: InternalsHook<ProtocolModule> = {
  name: "nats-batching",
  library: "nats",
  versions: ">=2.29.0 <3.0.0",
  check(protocol) {
    // `outbound` and `pendingLimit` belong to each connection: checked where they are read (below).
    return missingFunctions(protocol.ProtocolHandler?.prototype, "ProtocolHandler.prototype", [
      "flushPending",
    ]);
  },
  apply(protocol) {
    wrap(
      protocol.ProtocolHandler!.prototype,
      "flushPending",
      (flushNow) =>
        function flushPending(this: ProtocolHandler) {
          const size = typeof this.outbound?.size === "function" ? this.outbound.size() : NaN;
          // Over the client's limit, or a connection unlike the one written for: at once, as nats.js does.
          if (!(size < this.pendingLimit)) return flushNow.call(this);
          if (scheduled.has(this)) return;
          scheduled.add(this);
          setImmediate(() => {
            scheduled.delete(this);
            flushNow.call(this);
          });
        },
    );
  },
  remove(protocol) {
    if (protocol.ProtocolHandler) unwrap(protocol.ProtocolHandler.prototype, "flushPending");
  },
};

/** The module the hook applies to (exported for its tests). */
export const natsProtocol = protocolModule();

/** Batches the writes of every NATS connection of this process, unless the hook is off or cannot apply. */
export function batchNatsWrites(off: readonly string[], warn?: (message: string) => void): boolean {
  return useHook(natsBatchingHook, natsProtocol, { off, warn });
}
