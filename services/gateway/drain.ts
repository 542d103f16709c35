/**
 * The HTTP side of a graceful stop. moleculer-web closes its server only in its `stopped` handler,
 * after Moleculer has waited for the requests in flight, so until then it keeps accepting connections
 * and the wait never ends under steady traffic. Draining starts at the stop instead: no new
 * connections, every answer from then on closes its connection, and keep-alive sockets are closed as
 * soon as they are idle; the requests (and uploads) in flight finish, then whatever is left is cut.
 */
import type { Server } from "node:http";
import type { Socket } from "node:net";

/** How often idle keep-alive sockets are looked for while draining (Node closes those idle at close()). */
const SWEEP_MS = 200;

export class HttpDrain {
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
    server.on("request", (_req, res) => {
      // Runs after moleculer-web's handler has started, before any answer is written (it is async).
      if (this.draining && !res.headersSent) res.setHeader("Connection", "close");
    });
  }

  get isDraining(): boolean {
    return this.draining;
  }

  /** Stops accepting connections; the ones open finish their request and are then closed. */
  begin(): void {
    if (this.draining) return;
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
