/**
 * The admin socket's protocol, kept minimal: a connection carries one request, a line of JSON
 * (`{"command": "token", "params": {"user_id": "…"}}`), and gets one answer, a line of JSON
 * (`{"ok": true, "result": …}` or `{"ok": false, "error": {"message": …}}`), then is closed. Both
 * ends bound what they read and how long they wait for it (docs/decisions/0142-cli-beside-a-running-server.md).
 */
import path from "node:path";
import type { Socket } from "node:net";

/** The socket's file, in DATA_DIR beside the store it stands for. */
export const adminSocketPath = (config: { dataDir: string }): string =>
  path.join(config.dataDir, "admin.sock");

/** Longest path a Unix socket may have (sun_path is 108 bytes on Linux, with its terminating NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;

/** Largest request line: a page of devices to import is at most 256 KiB (shared/contracts/paging). */
export const MAX_REQUEST_BYTES = 1024 * 1024;
/** Largest answer line the CLI reads (the demo manifest, the largest, is tens of KiB). */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;
/** How long the server waits for the request line after a connection opens. */
export const REQUEST_WAIT_MS = 10_000;
/** How long the CLI waits for an answer (seeding the demo dataset is the longest command). */
export const ANSWER_WAIT_MS = 120_000;

/** A failure as it crosses the socket: the services' errors keep their code, type and fields. */
export interface WireError {
  message: string;
  code?: number;
  type?: string;
  data?: unknown;
}

export type Answer = { ok: true; result: unknown } | { ok: false; error: WireError };

export function wireError(err: unknown): WireError {
  const e = (err ?? {}) as { message?: unknown; code?: unknown; type?: unknown; data?: unknown };
  const out: WireError = { message: typeof e.message === "string" ? e.message : String(err) };
  if (typeof e.code === "number") out.code = e.code;
  if (typeof e.type === "string") out.type = e.type;
  // A validation error's fields, which the CLI prints; other data may not be JSON at all.
  if (Array.isArray(e.data)) out.data = e.data;
  return out;
}

/** An error the other end reported, as an Error the CLI can describe. */
export class RemoteError extends Error {
  readonly code?: number;
  readonly type?: string;
  readonly data?: unknown;
  constructor(wire: WireError) {
    super(wire.message);
    this.name = "RemoteError";
    this.code = wire.code;
    this.type = wire.type;
    this.data = wire.data;
  }
}

/**
 * Reads `socket` up to its first newline: resolves to the line (without it), or rejects when more than
 * `maxBytes` come first, when the socket ends or fails first, or after `waitMs`. Whatever follows the
 * line is ignored; the socket is paused once the line is in.
 */
export function readLine(socket: Socket, maxBytes: number, waitMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (err: Error | null, line?: string) => {
      clearTimeout(timer);
      socket.off("data", onData).off("end", onEnd).off("error", onError).off("close", onEnd);
      socket.pause();
      if (err) reject(err);
      else resolve(line as string);
    };
    const onData = (chunk: Buffer) => {
      const newline = chunk.indexOf(10);
      const used = newline === -1 ? chunk : chunk.subarray(0, newline);
      size += used.length;
      if (size > maxBytes) return finish(new Error(`the line is longer than ${maxBytes} bytes`));
      chunks.push(used);
      if (newline !== -1) finish(null, Buffer.concat(chunks).toString("utf8"));
    };
    const onEnd = () => finish(new Error("the connection closed before a whole line was sent"));
    const onError = (err: Error) => finish(err);
    const timer = setTimeout(() => finish(new Error(`no whole line within ${waitMs} ms`)), waitMs);
    socket.on("data", onData).on("end", onEnd).on("error", onError).on("close", onEnd);
  });
}
