/**
 * Several listening sockets for the gateway's one HTTP server. Since Node 20 (libuv 1.45), a listening
 * descriptor accepts one connection per turn of the event loop, and under load a turn is long, so a
 * burst of new connections (a join stampede) waited in the kernel's queue far longer than the requests
 * already accepted took to be answered.
 * With SO_REUSEPORT the kernel spreads new connections over N sockets of the same port, each accepting
 * one per turn; every socket hands its connections to the same HTTP server, so nothing else changes.
 * The measurements, and why the default is 64, are in docs/decisions/0073-slow-clients.md. A
 * socket costs a descriptor, and nothing per turn unless a connection waits on it.
 *
 * SO_REUSEPORT would also let a second process share the port without a word. So the port is first
 * bound plainly (a port in use fails with EADDRINUSE, as with one socket), then released and bound N
 * times with the option. Node has the option from 22.12 (23.1), on Linux. Before that, on Linux, the one
 * socket gets N - 1 more descriptors instead, each accepting one connection per turn from its one
 * queue (gateway/socket-copies, decision 0073). Elsewhere there is one socket.
 *
 * The other sockets must hand over connections made as the HTTP server's own would be, and Node does
 * not document the socket options an http.Server keeps: reading them is the http-acceptors hook
 * (shared/runtime/internals), applied to the Node versions it was written for and when every option is
 * there; otherwise one socket, with one warning.
 */
import net from "node:net";
import type { Server } from "node:http";
import { loadSetting } from "../../shared/config";
import { useHook, type HookSettings, type InternalsHook } from "../../shared/runtime/internals";
import { copyListeningSocket } from "./socket-copies";

/**
 * How the port gets several listening sockets: sockets of its own (`listen({ reusePort })`: Linux, Node
 * ≥ 22.12 or ≥ 23.1), copies of one socket's descriptor (Linux, older Nodes), or not at all.
 */
export type AcceptorSharing = "reuse-port" | "copies" | "none";

export function acceptorSharing(
  version = process.versions.node,
  platform = process.platform,
): AcceptorSharing {
  if (platform !== "linux") return "none";
  const [major, minor] = version.split(".").map(Number);
  const reusePort = major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12);
  return reusePort ? "reuse-port" : "copies";
}

export interface Acceptors {
  /** How many sockets accept connections (1 where the platform cannot share a port). */
  count: number;
  /** Stops accepting on every socket; connections already accepted stay open. */
  stopAccepting(): void;
}

/** `reusePort` is newer than the Node types this project builds against (Node 20's). */
type ListenOptions = net.ListenOptions & { reusePort?: boolean };

/**
 * The accept queue each listening socket asks for; the kernel caps it at `net.core.somaxconn` (4096 by
 * default since Linux 5.4). Node's default, 511, overflowed under a burst of new connections while the
 * event loop was busy: the kernel then drops the handshake's last packet, and that client waits for its
 * own retransmits (1, 3, 7, 15 s…) rather than its turn in the queue.
 */
export const LISTEN_BACKLOG = 4096;

function listen(server: net.Server, options: ListenOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (err: Error) => reject(err);
    server.once("error", failed);
    // The prototype's listen: the gateway replaces its server's own with openAcceptors.
    net.Server.prototype.listen.call(server, { backlog: LISTEN_BACKLOG, ...options }, () => {
      server.off("error", failed);
      resolve();
    });
  });
}

/** The options http.Server passes to net.Server, as it keeps them (undocumented fields). */
const SOCKET_OPTIONS = {
  allowHalfOpen: "boolean",
  noDelay: "boolean",
  keepAlive: "boolean",
  keepAliveInitialDelay: "number",
  highWaterMark: "number",
} as const;

export const httpAcceptorsHook: InternalsHook<Server> = {
  name: "http-acceptors",
  library: "node",
  versions: ">=20.0.0 <25.0.0",
  check(server) {
    const fields = server as unknown as Record<string, unknown>;
    return Object.entries(SOCKET_OPTIONS)
      .filter(([name, type]) => typeof fields[name] !== type)
      .map(([name, type]) => `http.Server's ${name} (a ${type})`);
  },
  // Nothing in Node is changed: openAcceptors reads the options only once the hook is applied.
  apply: () => undefined,
  remove: () => undefined,
};

function closeNow(server: net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/**
 * Opens `wanted` listening sockets on `port` for `server` (one where the platform cannot share a port,
 * or the http-acceptors hook is off or cannot apply).
 */
export async function openAcceptors(
  server: Server,
  port: number,
  host: string,
  wanted: number,
  sharing = acceptorSharing(),
  hooks: HookSettings = { off: loadSetting("internalsHooksOff") },
): Promise<Acceptors> {
  if (wanted <= 1 || sharing === "none" || !useHook(httpAcceptorsHook, server, hooks)) {
    return oneSocket(server, port, host);
  }
  if (sharing === "copies") return copiedSockets(server, port, host, wanted, hooks);
  // Fails like a single socket would when the port is taken; picks the port when asked for any.
  const probe = net.createServer();
  await listen(probe, { port, host });
  const chosen = (probe.address() as net.AddressInfo).port;
  await closeNow(probe);

  await listen(server, { port: chosen, host, reusePort: true });
  const options = socketOptionsOf(server);
  const others: net.Server[] = [];
  try {
    for (let i = 1; i < wanted; i++) {
      const other = net.createServer(options, (socket) => server.emit("connection", socket));
      await listen(other, { port: chosen, host, reusePort: true });
      others.push(other);
    }
  } catch (err) {
    for (const s of [server, ...others]) s.close();
    throw err;
  }
  return severalSockets(server, others);
}

async function oneSocket(server: Server, port: number, host: string): Promise<Acceptors> {
  await listen(server, { port, host });
  return severalSockets(server, []);
}

/** The server's own socket and the others (none: one socket). */
function severalSockets(server: Server, others: net.Server[]): Acceptors {
  return {
    count: others.length + 1,
    stopAccepting() {
      server.close();
      for (const other of others) other.close();
    },
  };
}

/**
 * One socket, with `wanted - 1` more descriptors of it, each watched by a server of its own that hands
 * its connections to `server`. Should the copies fail, the one socket stays, with one warning.
 */
async function copiedSockets(
  server: Server,
  port: number,
  host: string,
  wanted: number,
  hooks: HookSettings,
): Promise<Acceptors> {
  const one = await oneSocket(server, port, host);
  const options = socketOptionsOf(server);
  const handOver = (socket: net.Socket) => server.emit("connection", socket);
  const others: net.Server[] = [];
  try {
    await copyListeningSocket(server, wanted - 1, {
      adopt(copy) {
        // `listen` with a server takes over its descriptor (Node's listen(handle)): the connections
        // it accepts are then made with the HTTP server's options.
        const other = net.createServer(options, handOver);
        other.listen(copy);
        others.push(other);
      },
      accepted: handOver,
    });
  } catch (err) {
    for (const other of others) other.close();
    (hooks.warn ?? ((m: string) => process.emitWarning(m)))(
      `one listening socket: ${(err as Error).message}`,
    );
    return one;
  }
  return severalSockets(server, others);
}

/**
 * What the HTTP server's own accepted sockets get (http.Server passes these to net.Server, which
 * keeps the keep-alive delay in seconds); read through the http-acceptors hook.
 */
function socketOptionsOf(server: Server): net.ServerOpts {
  const own = server as unknown as Required<net.ServerOpts>;
  return {
    allowHalfOpen: own.allowHalfOpen,
    noDelay: own.noDelay,
    keepAlive: own.keepAlive,
    keepAliveInitialDelay: own.keepAliveInitialDelay * 1000,
    highWaterMark: own.highWaterMark,
  };
}
