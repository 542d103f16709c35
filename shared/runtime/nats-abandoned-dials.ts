/**
 * A connection attempt nats.js gave up must stay given up. nats.js 2.x dials with a timer (its
 * `timeout` option): when the timer wins, it closes the attempt's transport, but a transport that is
 * not connected yet ignores `close()`, so the attempt goes on in the background. If the server answers
 * late (a restarted container's address answering a SYN retransmitted from before, or an INFO sent
 * late), the transport connects anyway: a second live socket nobody reads. When the server drops it
 * (it never sent CONNECT), its close reaches the client's protocol handler as a disconnect of the live
 * connection: the client dials again and replaces its parser while the live socket's reader still
 * feeds it, so two streams interleave in one parser. Seen in the deploy tier after a nats container
 * restart: "processMsgArgs Parse Error", INFO packets with bad JSON, a connection flapping for half a
 * minute, a paid join's payment and two refresh families lost. The report for upstream, with the fix
 * it proposes: docs/decisions/0057-tests-over-processes.md.
 *
 * The hook wraps the Node transport's `close` (a close before the connection is up marks the attempt
 * abandoned) and `connect` (an abandoned attempt that connects after all is destroyed at once, and its
 * connect fails, so it never becomes connected and its close never reaches the handler).
 */
import { missingFunctions, unwrap, useHook, wrap, type InternalsHook } from "./internals";

/** The parts of nats.js's NodeTransport (not in its typings) the hook touches. */
interface NodeTransport {
  connected: boolean;
  done: boolean;
  socket?: { removeAllListeners(): void; destroy(): void };
  connect(...args: unknown[]): Promise<void>;
  close(...args: unknown[]): Promise<void>;
}

interface TransportModule {
  NodeTransport?: { prototype: Pick<NodeTransport, "connect" | "close"> };
}

function transportModule(): TransportModule {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require("nats/lib/src/node_transport") as TransportModule;
  } catch {
    return {};
  }
}

/** Transports closed before they connected. */
const abandoned = new WeakSet<object>();

export const natsAbandonedDialsHook: InternalsHook<TransportModule> = {
  name: "nats-abandoned-dials",
  library: "nats",
  versions: ">=2.29.0 <3.0.0",
  check(module) {
    return missingFunctions(module.NodeTransport?.prototype, "NodeTransport.prototype", ["connect", "close"]);
  },
  apply(module) {
    const proto = module.NodeTransport!.prototype;
    wrap(
      proto,
      "close",
      (close) =>
        function closeTransport(this: NodeTransport, ...args: unknown[]) {
          if (!this.connected && !this.done) abandoned.add(this);
          return close.apply(this, args as never) as Promise<void>;
        },
    );
    wrap(
      proto,
      "connect",
      (connect) =>
        async function connectTransport(this: NodeTransport, ...args: unknown[]) {
          await connect.apply(this, args as never);
          if (!abandoned.has(this)) return;
          const socket = this.socket;
          this.socket = undefined;
          this.connected = false;
          this.done = true;
          socket?.removeAllListeners();
          socket?.destroy();
          throw new Error("NATS connection attempt given up before it connected");
        },
    );
  },
  remove(module) {
    if (!module.NodeTransport) return;
    unwrap(module.NodeTransport.prototype, "connect");
    unwrap(module.NodeTransport.prototype, "close");
  },
};

/** The module the hook applies to (exported for its tests). */
export const natsTransport = transportModule();

/** Keeps given-up dials given up in every NATS connection of this process, unless off or unfit. */
export function closeAbandonedNatsDials(off: readonly string[], warn?: (message: string) => void): boolean {
  return useHook(natsAbandonedDialsHook, natsTransport, { off, warn });
}
