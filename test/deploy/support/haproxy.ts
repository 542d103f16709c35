/**
 * A real load balancer in front of gateway containers: HAProxy from Debian's package, run on the host
 * (the tests reach the containers' addresses from there), routing as kube-proxy does. It sends a request
 * only to a gateway whose `GET /health/ready` answered 200 (two failed checks a second apart take one
 * out, two good ones put it back), never retries a request elsewhere (`retries 0`, no `option
 * redispatch`): a gateway that refuses or drops a connection it was sent fails that request. Each answer
 * names the gateway that gave it (X-Served-By). Its pid file sits among the run's files, so that
 * test/deploy/run.sh's exit trap ends it even when jest is killed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "../../support/brokers";
import { runId } from "./podman";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The health check's period and thresholds: a stopping gateway leaves rotation within FALL × INTER_MS. */
export const CHECK = { INTER_MS: 1000, FALL: 2, RISE: 2 } as const;

export interface Backend {
  name: string;
  address: string;
  port: number;
}

export function haproxyConfig(listen: number, stats: number, backends: Backend[]): string {
  return [
    "global",
    "  maxconn 2000",
    "defaults",
    "  mode http",
    "  timeout connect 2s",
    "  timeout client 60s",
    "  timeout server 60s",
    // As kube-proxy: a request sent to a gateway is never sent again to another.
    "  retries 0",
    "frontend api",
    `  bind 127.0.0.1:${listen}`,
    "  default_backend gateways",
    "frontend stats",
    `  bind 127.0.0.1:${stats}`,
    "  stats enable",
    "  stats uri /stats",
    "backend gateways",
    "  balance roundrobin",
    "  option httpchk GET /health/ready",
    "  http-check expect status 200",
    "  http-response set-header X-Served-By %s",
    `  default-server check inter ${CHECK.INTER_MS} fall ${CHECK.FALL} rise ${CHECK.RISE}`,
    ...backends.map((b) => `  server ${b.name} ${b.address}:${b.port}`),
    "",
  ].join("\n");
}

export class LoadBalancer {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private output = "";
  url = "";
  private statsUrl = "";

  constructor(private readonly backends: Backend[]) {}

  private file(suffix: string): string {
    return path.join(process.env.TMPDIR || os.tmpdir(), `${runId()}-haproxy.${suffix}`);
  }

  async start(): Promise<void> {
    const [listen, stats] = [await freePort(), await freePort()];
    fs.writeFileSync(this.file("cfg"), haproxyConfig(listen, stats, this.backends));
    // -db: in the foreground, logging to stderr; -W: master-worker, so the pid file's pid ends it all.
    const child = spawn("haproxy", ["-W", "-db", "-f", this.file("cfg"), "-p", this.file("pid")], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout?.on("data", (d) => (this.output += d));
    child.stderr?.on("data", (d) => (this.output += d));
    this.exited = new Promise((r) => child.once("exit", () => r()));
    this.child = child;
    this.url = `http://127.0.0.1:${listen}`;
    this.statsUrl = `http://127.0.0.1:${stats}/stats;csv`;
    await this.waitUp(this.backends.map((b) => b.name));
  }

  /** Each backend's state as HAProxy's statistics give it (UP, DOWN, "UP 1/2"…). */
  async states(): Promise<Record<string, string>> {
    const csv = await (await fetch(this.statsUrl, { signal: AbortSignal.timeout(2000) })).text();
    const rows = csv.split("\n").filter((l) => l.startsWith("gateways,"));
    const header = csv.split("\n")[0].replace(/^# /, "").split(",");
    const status = header.indexOf("status");
    return Object.fromEntries(
      rows.map((r) => r.split(",")).map((cells) => [cells[1], cells[status]] as [string, string]),
    );
  }

  /** Waits until HAProxy routes to each of `names` (its checks have passed RISE times). */
  async waitUp(names: string[], timeoutMs = 60_000): Promise<number> {
    const started = Date.now();
    let last: Record<string, string> = {};
    while (Date.now() - started < timeoutMs) {
      if (this.child?.exitCode !== null) throw new Error(`haproxy exited:\n${this.output}`);
      last = await this.states().catch(() => ({}));
      if (names.every((n) => last[n] === "UP")) return Date.now() - started;
      await sleep(200);
    }
    throw new Error(
      `HAProxy did not route to ${names.join(", ")} within ${timeoutMs} ms: ${JSON.stringify(last)}`,
    );
  }

  async stop(): Promise<void> {
    if (!this.child || this.child.exitCode !== null) return;
    this.child.kill("SIGTERM");
    await Promise.race([this.exited, sleep(5000)]);
    for (const f of ["cfg", "pid"]) fs.rmSync(this.file(f), { force: true });
  }
}
