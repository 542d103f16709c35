/**
 * A raw HTTP/1.1 client over a TCP socket: the fuzz tier sends request lines, headers and bodies that
 * fetch or http.request would refuse to build (bad escapes, NUL, control characters, invalid UTF-8).
 * Every request carries `Connection: close`, so the answer ends where the connection does.
 */
import net from "node:net";

export interface RawRequest {
  method: string;
  /** The request target exactly as sent (UTF-8 encoded on the wire). */
  target: string;
  headers: [string, string][];
  body?: Buffer;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** A request that got no answer: the connection was reset or closed, or the time ran out. */
export class NoAnswerError extends Error {}

/** The connection was reset before any answer arrived, while a body was being sent. */
export class ResetWhileSendingError extends NoAnswerError {}

function decodeChunked(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let i = 0;
  while (i < data.length) {
    const eol = data.indexOf("\r\n", i);
    if (eol < 0) break;
    const size = parseInt(data.subarray(i, eol).toString("latin1"), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(data.subarray(eol + 2, eol + 2 + size));
    i = eol + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

function parseResponse(data: Buffer): RawResponse | null {
  const end = data.indexOf("\r\n\r\n");
  if (end < 0) return null;
  const [statusLine, ...lines] = data.subarray(0, end).toString("latin1").split("\r\n");
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  if (!m) return null;
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = data.subarray(end + 4);
  if (/chunked/i.test(headers["transfer-encoding"] ?? "")) body = decodeChunked(body);
  else if (headers["content-length"] !== undefined)
    body = body.subarray(0, Number(headers["content-length"]));
  return { status: Number(m[1]), headers, body };
}

/** Sends one request on a fresh connection and reads the answer to the connection's end. */
export function sendRaw(port: number, req: RawRequest, timeoutMs: number): Promise<RawResponse> {
  const head =
    `${req.method} ${req.target} HTTP/1.1\r\n` +
    `Host: 127.0.0.1:${port}\r\nConnection: close\r\n` +
    req.headers.map(([k, v]) => `${k}: ${v}\r\n`).join("") +
    (req.body ? `Content-Length: ${req.body.length}\r\n` : "") +
    "\r\n";
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(port, "127.0.0.1");
    let settled = false;
    const finish = (err: Error | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const parsed = parseResponse(Buffer.concat(chunks));
      if (parsed) resolve(parsed);
      // A reset with nothing received, on a request with a body: the answer was lost to the reset (the
      // server answered and closed without reading the body), or there was none; the caller checks
      // the system's health either way.
      else if (err && req.body && chunks.length === 0 && /EPIPE|ECONNRESET/.test(err.message))
        reject(new ResetWhileSendingError(err.message));
      else reject(new NoAnswerError(err ? err.message : "connection closed without an answer"));
    };
    const timer = setTimeout(() => finish(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("end", () => finish(null));
    socket.on("close", () => finish(null));
    // A reset after a complete answer (the server closing on an unread body) still counts as the answer.
    socket.on("error", (err) => finish(err));
    socket.write(Buffer.from(head, "utf8"));
    if (req.body) socket.write(req.body);
  });
}
