/**
 * The embedded server's admin socket: a Unix socket in DATA_DIR (mode 0600, so only the account that
 * runs the server, and root, may connect) on which the operations CLI hands the server the commands it
 * cannot run itself while the server holds the store. Nothing it receives can stop the server: a bad
 * request, a failing command or a client gone away is at most an error answer and a closed connection.
 * Why a socket and not a port or a route: docs/decisions/0142-cli-beside-a-running-server.md.
 */
import fs from "node:fs";
import net from "node:net";
import { BadRequestError, requestOf, type CommandRequest } from "./commands";
import {
  MAX_REQUEST_BYTES,
  MAX_SOCKET_PATH_BYTES,
  REQUEST_WAIT_MS,
  readLine,
  wireError,
  type Answer,
} from "./protocol";

export interface AdminSocketOptions {
  path: string;
  /** Runs one command (./commands.ts runCommand on the server's broker). */
  handle(request: CommandRequest): Promise<unknown>;
  log: { info(message: string): void; warn(message: string): void };
  /** Bounds, smaller in tests. */
  maxRequestBytes?: number;
  requestWaitMs?: number;
}

export interface AdminSocket {
  path: string;
  /** Stops taking connections and removes the file; commands under way still get their answer. */
  close(): Promise<void>;
}

/** Connections served at once; more are refused until one ends (the CLI runs one command at a time). */
const MAX_CONNECTIONS = 8;

/** Whether a process accepts connections on the socket at `file`. */
export const socketAnswers = (file: string): Promise<boolean> =>
  new Promise((resolve) => {
    const probe = net.connect(file);
    probe.once("connect", () => {
      probe.destroy();
      resolve(true);
    });
    probe.once("error", () => resolve(false));
  });

/**
 * Whether `file` may be listened on: absent, or a socket nobody accepts on (left by a server that was
 * killed, which then removed nothing), which is removed. A live socket is another server's, and
 * anything else at that path is not ours to delete: both are left alone, with a warning.
 */
async function clearStale(file: string, log: AdminSocketOptions["log"]): Promise<boolean> {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(file);
  } catch {
    return true;
  }
  if (!stat.isSocket()) {
    log.warn(`${file} exists and is not a socket: no admin socket (the CLI needs the server stopped)`);
    return false;
  }
  if (await socketAnswers(file)) {
    log.warn(`Another process takes commands on ${file}: no admin socket for this one`);
    return false;
  }
  fs.rmSync(file, { force: true });
  log.info(`Removed ${file}, left by a process that was stopped without closing it`);
  return true;
}

/** Listens on `file` with a socket file only its owner may use, from the moment it exists. */
function listenPrivately(server: net.Server, file: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    // The file is made by the bind, under the umask; listen() binds synchronously for a path, so a
    // umask of 0177 around it leaves no moment in which the file is open to others.
    const umask = process.umask(0o177);
    try {
      server.listen(file, () => {
        server.off("error", reject);
        resolve();
      });
    } finally {
      process.umask(umask);
    }
  }).then(() => fs.chmodSync(file, 0o600));
}

/** Serves one connection: one request line, one answer line, then the end. */
async function serve(socket: net.Socket, opts: AdminSocketOptions): Promise<void> {
  // A client that resets or vanishes must not become an uncaught error.
  socket.on("error", () => undefined);
  let answer: Answer;
  let command = "";
  try {
    const line = await readLine(
      socket,
      opts.maxRequestBytes ?? MAX_REQUEST_BYTES,
      opts.requestWaitMs ?? REQUEST_WAIT_MS,
    ).catch((err: Error) => {
      throw new BadRequestError(`bad request: ${err.message}`);
    });
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      throw new BadRequestError("bad request: not JSON");
    }
    const request = requestOf(parsed);
    command = request.command;
    answer = { ok: true, result: await opts.handle(request) };
    opts.log.info(`CLI command "${command}" done`);
  } catch (err) {
    answer = { ok: false, error: wireError(err) };
    if (command) opts.log.info(`CLI command "${command}" failed: ${answer.error.message}`);
  }
  if (socket.destroyed || socket.writableEnded) return void socket.destroy();
  let text: string;
  try {
    text = JSON.stringify(answer);
  } catch (err) {
    text = JSON.stringify({ ok: false, error: wireError(err) });
  }
  // Closed once written, whatever the client still sends or holds open: connections are few (8).
  socket.end(`${text}\n`, () => socket.destroy());
}

/**
 * Opens the admin socket at `opts.path`; resolves to null (after a warning) when it cannot, since the
 * server runs fine without it: the CLI then says the server must be stopped.
 */
export async function openAdminSocket(opts: AdminSocketOptions): Promise<AdminSocket | null> {
  const file = opts.path;
  if (Buffer.byteLength(file) > MAX_SOCKET_PATH_BYTES) {
    opts.log.warn(
      `No admin socket: ${file} is longer than a Unix socket's path may be (${MAX_SOCKET_PATH_BYTES} bytes); the CLI needs the server stopped`,
    );
    return null;
  }
  if (!(await clearStale(file, opts.log))) return null;
  const server = net.createServer((socket) => void serve(socket, opts));
  server.maxConnections = MAX_CONNECTIONS;
  try {
    await listenPrivately(server, file);
  } catch (err) {
    // Listening but not private (the chmod failed) is no better than not listening.
    if (server.listening) server.close();
    opts.log.warn(`No admin socket at ${file}: ${(err as Error).message}; the CLI needs the server stopped`);
    return null;
  }
  // Errors after the start (none expected) are logged, never thrown at the process.
  server.on("error", (err) => opts.log.warn(`Admin socket ${file}: ${err.message}`));
  let closed: Promise<void> | null = null;
  return {
    path: file,
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        // Closing the listening handle removes the file; connections under way finish on their own.
        server.close(() => resolve());
        fs.rmSync(file, { force: true });
      })),
  };
}
