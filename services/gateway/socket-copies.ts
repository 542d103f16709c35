/**
 * More descriptors of one listening socket, for a Node without SO_REUSEPORT (before 22.12). libuv
 * accepts one connection per descriptor and turn of the event loop; each copy of the descriptor is
 * watched on its own, so N copies accept up to N waiting connections a turn from the socket's one queue
 * (decision 0073).
 *
 * Node makes a copy of a descriptor only when it passes a server to another process (child_process's
 * `send` with a `net.Server`: the receiver gets a new descriptor of the same socket). So a short-lived
 * helper process sends each server it is given straight back, and the copy that comes back is a new
 * descriptor in this process. One copy is asked for at a time: the helper can then send it back at
 * once (Node holds a message with a descriptor until the previous one is acknowledged) and close its
 * own before its event loop turns, so it accepts nothing. Should a send wait all the same, a
 * connection the helper accepts meanwhile is sent back too, so none is lost.
 */
import { spawn } from "node:child_process";
import net from "node:net";

/**
 * The helper: returns each server it gets, closes its copy once sent, leaves when all are back, and
 * at once should the gateway be gone (no copy of its port may outlive it).
 */
const HELPER = `
let left = Number(process.argv[1]);
process.on("disconnect", () => process.exit(0));
process.on("message", (message, server) => {
  if (message !== "copy" || !server) return;
  server.on("connection", (socket) => process.send("accepted", socket));
  process.send("copy", server, () => {
    server.close();
    if (--left === 0) process.disconnect();
  });
});
`;

/** The longest the copies may take before the gateway listens on its one socket instead. */
const COPIES_TIMEOUT_MS = 10_000;

export interface CopyHandlers {
  /**
   * Takes a copy (a `net.Server` already listening on the new descriptor) as it arrives, and must set
   * it to accept at once: until then a connection it accepted would have no listener.
   */
  adopt(copy: net.Server): void;
  /** A connection the helper accepted meanwhile. */
  accepted(socket: net.Socket): void;
}

/** Makes `count` copies of `server`'s listening descriptor; rejects when the helper cannot. */
export function copyListeningSocket(
  server: net.Server,
  count: number,
  handlers: CopyHandlers,
  timeoutMs = COPIES_TIMEOUT_MS,
): Promise<void> {
  return new Promise((resolve, reject) => {
    // No options of ours (NODE_OPTIONS, --cpu-prof) reach the helper: it only passes descriptors on.
    const helper = spawn(process.execPath, ["-e", HELPER, String(count)], {
      stdio: ["ignore", "ignore", "ignore", "ipc"],
      env: {},
    });
    let copies = 0;
    const fail = (reason: string) => {
      clearTimeout(timer);
      helper.kill();
      reject(new Error(`copies of the listening socket: ${reason}`));
    };
    const timer = setTimeout(() => fail(`${copies} of ${count} after ${timeoutMs} ms`), timeoutMs);
    helper.on("error", (err) => fail(err.message));
    const askForOne = () =>
      helper.send("copy", server, (err) => {
        if (err) fail(err.message);
      });
    helper.on("message", (message, handle) => {
      if (message === "copy" && handle instanceof net.Server) {
        copies += 1;
        handlers.adopt(handle);
        if (copies < count) askForOne();
      } else if (message === "accepted" && handle instanceof net.Socket) {
        handlers.accepted(handle);
      }
    });
    // After the helper left and its channel closed: every message it sent has been read.
    helper.on("close", (code, signal) => {
      if (copies === count) {
        clearTimeout(timer);
        resolve();
      } else fail(`the helper left (${signal ?? `code ${code}`}) with ${copies} of ${count}`);
    });
    askForOne();
  });
}
