/**
 * The HTTP side of a graceful stop, in two steps.
 * - Leaving (`leave`, at SIGTERM; readiness answers 503 meanwhile): for SHUTDOWN_DELAY_MS the server
 *   still accepts and serves, so that nothing is refused while a load balancer (or kube-proxy's
 *   endpoints) has not yet seen the 503; every answer from then on closes its connection, so a client
 *   on keep-alive opens a new connection, which the balancer sends elsewhere once it has seen the 503.
 *   Idle keep-alive sockets are left to the keep-alive timeout (HTTP_KEEP_ALIVE_TIMEOUT_MS, below any
 *   sensible delay): closing one while the balancer still routes here would race a request sent on it.
 * - Draining (`begin`, when the broker's stop begins): no new connections, and keep-alive sockets are
 *   closed as soon as they are idle, never in the middle of an answer; the requests (and uploads) in
 *   flight finish, then whatever is left is cut (`end`). moleculer-web closes its server only in its
 *   `stopped` handler, after Moleculer has waited for the requests in flight, so until then it would
 *   keep accepting and the wait would never end under steady traffic: hence this.
 */
import type { Server } from "node:http";
import type { Socket } from "node:net";

/** How often idle keep-alive sockets are looked for while draining (Node closes those idle at close()). */
const SWEEP_MS = 200;

export class HttpDrain {
  /** Answers close their connection (leaving or draining). */
  private closing = false;
  private draining = false;
  private closed: Promise<void> | null = null;
  /** The connections the server was handed, each until it closes. */
  private readonly open = new Set<Socket>();
  private lastClosed: (() => void) | null = null;

  /** `stopAccepting` closes the server's listening socket. */
  constructor(
    private readonly server: Server,
    private readonly stopAccepting: () => void,
  ) {
    server.on("connection", (socket: Socket) => {
      this.open.add(socket);
      socket.once("close", () => {
        this.open.delete(socket);
        if (this.open.size === 0) this.lastClosed?.();
      });
    });
    // Before the server's own request listener, so that an answer written at once carries it too.
    server.prependListener("request", (_req, res) => {
      if (this.closing) res.setHeader("Connection", "close");
    });
  }

  get isDraining(): boolean {
    return this.draining;
  }

  /** Keeps accepting and serving; every answer from now on closes its connection. */
  leave(): void {
    this.closing = true;
  }

  /** Stops accepting connections; the ones open finish their request and are then closed. */
  begin(): void {
    if (this.draining) return;
    this.closing = true;
    this.draining = true;
    this.stopAccepting();
    this.closed =
      this.open.size === 0 ? Promise.resolve() : new Promise((resolve) => (this.lastClosed = resolve));
    // A socket whose request was already running when the drain began answers with keep-alive:
    // close it once that answer is out.
    const sweep = setInterval(() => this.server.closeIdleConnections(), SWEEP_MS);
    sweep.unref();
    void this.closed.then(() => clearInterval(sweep));
  }

  /** Waits up to `ms` for the open connections to end, then destroys the rest. */
  async end(ms: number): Promise<void> {
    this.begin();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    });
    await Promise.race([this.closed, timeout]);
    clearTimeout(timer);
    this.server.closeAllConnections();
  }
}
