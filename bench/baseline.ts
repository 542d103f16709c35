/**
 * Records real answers of the system and hands them to the baseline server (baseline-server.ts), a
 * separate process started once per bench run.
 */
import { fork, type ChildProcess } from "node:child_process";
import http from "node:http";
import path from "node:path";

/** One answer as sent on the wire; `count` makes the baseline repeat it that many times, then move on. */
export interface RecordedResponse {
  status: number;
  headers: [string, string][];
  body: Buffer;
  count?: number;
}

export interface BaselineMessage {
  responses: { status: number; headers: [string, string][]; body: string; count?: number }[];
}

// Node writes these itself on every answer, the baseline's as the gateway's.
const PER_CONNECTION = new Set(["date", "connection", "keep-alive", "transfer-encoding"]);

/** Sends one request to the system and keeps its answer byte for byte (headers in their own case). */
export function record(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RecordedResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: init.method ?? "GET", headers: init.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const headers: [string, string][] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          const name = res.rawHeaders[i];
          if (!PER_CONNECTION.has(name.toLowerCase())) headers.push([name, res.rawHeaders[i + 1]]);
        }
        resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
      });
    });
    req.on("error", reject);
    req.end(init.body);
  });
}

export interface Baseline {
  url: string;
  pid: number;
  /** Replaces what the baseline answers (and restarts its sequence of `count`s). */
  serve(responses: RecordedResponse[]): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A stand-in server answering recorded bytes: the bare node:http baseline (baseline-server.ts), or the
 * framework's floor, moleculer-web with one action and nothing else (floor-server.ts).
 */
export async function startBaseline(server: "bare" | "moleculer-web" = "bare"): Promise<Baseline> {
  const script = server === "bare" ? "baseline-server.ts" : "floor-server.ts";
  const child: ChildProcess = fork(path.join(__dirname, script), [], {
    execArgv: ["--require", "tsx/cjs"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  // One request to the child at a time: each message it sends answers the one before.
  let pending: { resolve(m: { port?: number }): void; reject(e: Error): void } | null = null;
  child.on("message", (m) => {
    pending?.resolve(m as { port?: number });
    pending = null;
  });
  child.on("exit", (code) => {
    pending?.reject(new Error(`baseline server exited (${code})`));
    pending = null;
  });
  const reply = () => new Promise<{ port?: number }>((resolve, reject) => (pending = { resolve, reject }));
  const { port } = await reply();
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid as number,
    async serve(responses) {
      const ready = reply();
      const msg: BaselineMessage = {
        responses: responses.map((r) => ({ ...r, body: r.body.toString("base64") })),
      };
      child.send(msg);
      await ready;
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.disconnect();
      await exited;
    },
  };
}
