/**
 * Clients that hold a connection without finishing their request: an upload that stalls after its first
 * bytes, and requests whose headers arrive a byte at a time. Raw sockets, so nothing on the client side
 * times out or retries on its own; each records what it was answered and when its connection closed.
 */
import { spawn } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { eventFields, pngBytes } from "./upload";

export interface SlowOutcome {
  openedAt: number;
  /** When the client sent its last byte. */
  lastSentAt: number;
  closedAt: number;
  /** The answer's status (0: none came), and its headers and body. */
  status: number;
  headers: Record<string, string>;
  body: string;
}

function parseAnswer(raw: string): Pick<SlowOutcome, "status" | "headers" | "body"> {
  const end = raw.indexOf("\r\n\r\n");
  if (end < 0) return { status: 0, headers: {}, body: "" };
  const [statusLine, ...lines] = raw.slice(0, end).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(" ")[1]) || 0, headers, body: raw.slice(end + 4) };
}

/** Opens a connection, lets `drive` send on it, and resolves once the server has closed it. */
function held(baseUrl: string, drive: (socket: net.Socket, sent: () => void) => void): Promise<SlowOutcome> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve) => {
    const openedAt = Date.now();
    let lastSentAt = openedAt;
    let raw = "";
    const socket = net.connect(Number(port), hostname);
    socket.setEncoding("latin1");
    socket.on("data", (d: string) => (raw += d));
    socket.on("error", () => undefined);
    socket.on("close", () => resolve({ openedAt, lastSentAt, closedAt: Date.now(), ...parseAnswer(raw) }));
    socket.on("connect", () => drive(socket, () => (lastSentAt = Date.now())));
  });
}

/**
 * A store-event upload that sends its headers, its form fields and the first kilobyte of its picture,
 * then nothing more (its Content-Length promises a megabyte).
 */
export function stalledUpload(
  baseUrl: string,
  storeId: number | string,
  token: string,
): Promise<SlowOutcome> {
  const boundary = "----stalled-upload";
  const head = Buffer.from(
    Object.entries(eventFields())
      .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
      .join("") +
      `--${boundary}\r\nContent-Disposition: form-data; name="main_picture"; filename="slow.png"\r\n` +
      "Content-Type: image/png\r\n\r\n",
  );
  const firstBytes = Buffer.concat([head, pngBytes(1024)]);
  const request = Buffer.from(
    `POST /stores/${storeId}/events HTTP/1.1\r\nHost: ${new URL(baseUrl).host}\r\n` +
      `Authorization: Bearer ${token}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\n` +
      `Content-Length: ${firstBytes.length + 1024 * 1024}\r\n\r\n`,
  );
  return held(baseUrl, (socket, sent) => {
    socket.write(Buffer.concat([request, firstBytes]));
    sent();
  });
}

/** A JSON POST that sends its headers and the first bytes of its body, then nothing more. */
export function stalledJson(baseUrl: string, path: string, token: string): Promise<SlowOutcome> {
  const request =
    `POST ${path} HTTP/1.1\r\nHost: ${new URL(baseUrl).host}\r\nAuthorization: Bearer ${token}\r\n` +
    "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n" +
    '{"attributes": [';
  return held(baseUrl, (socket, sent) => {
    socket.write(request);
    sent();
  });
}

export interface SlowHeadersOutcome {
  /** From its first byte to its close (-1: it never connected). */
  ms: number;
  status: number;
  body: string;
}

/**
 * `count` connections, opened over `rampMs`, whose request line and headers arrive one byte every
 * `everyMs` (a thousand bytes of headers: they never end within any sane bound), from a process of their
 * own (slow-headers-child.js). Resolves once the server has closed every one.
 */
export function slowHeaders(
  baseUrl: string,
  count: number,
  everyMs: number,
  rampMs: number,
): Promise<SlowHeadersOutcome[]> {
  const { hostname, port } = new URL(baseUrl);
  const child = spawn(
    process.execPath,
    [
      path.join(__dirname, "slow-headers-child.js"),
      hostname,
      port,
      String(count),
      String(everyMs),
      String(rampMs),
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve(JSON.parse(out) as SlowHeadersOutcome[]) : reject(new Error(`exit ${code}`)),
    );
  });
}

/**
 * How long a new connection waits to be answered while the test runs: every `everyMs` a fresh connection
 * asks `GET /health` (and the server closes it once answered), and the time from its opening to its
 * close is recorded. Where the server listens on one socket, that is mostly the time the connection
 * waited in the port's accept queue, which no bound of the server can see (decision 0073). `stop`
 * resolves to every wait measured, in milliseconds.
 */
export function acceptWaits(baseUrl: string, everyMs: number): { stop(): Promise<number[]> } {
  const { host } = new URL(baseUrl);
  const request = `GET /health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;
  const probes: Promise<SlowOutcome>[] = [];
  const probe = () =>
    held(baseUrl, (socket, sent) => {
      socket.write(request);
      sent();
    });
  const timer = setInterval(() => probes.push(probe()), everyMs);
  return {
    async stop() {
      clearInterval(timer);
      return (await Promise.all(probes)).map((o) => o.closedAt - o.openedAt);
    },
  };
}
