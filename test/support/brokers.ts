/**
 * Private message brokers for the integration tier: a nats-server with JetStream on a free port and a
 * temporary directory. Missing binaries fail the test under CI=true (never a silent skip).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { stopProcess } from "./processes";

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });

export const binary = (name: string): string | null => {
  const found = spawnSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).stdout.trim();
  return found || null;
};

/** True when the test must run (binary present) ; throws under CI when it is missing. */
export function requireBinary(name: string): boolean {
  if (binary(name)) return true;
  if (process.env.CI === "true") throw new Error(`${name} is not installed (CI installs it in .ci/run)`);
  process.stderr.write(`skipping: ${name} is not installed\n`);
  return false;
}

const waitForPort = async (port: number, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const open = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1", () => {
        s.end();
        resolve(true);
      });
      s.on("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`port ${port} did not open`);
};

export interface RunningBroker {
  url: string;
  port: number;
  process: ChildProcess;
  /** kill -9, wait `downMs`, start again on the same port and data folder. */
  restart(downMs?: number): Promise<void>;
  stop(): Promise<void>;
}

async function serverProcess(
  name: string,
  scheme: string,
  args: (port: number, dir: string) => string[],
): Promise<RunningBroker> {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `it-${name}-`));
  const launch = () => spawn(binary(name) as string, args(port, dir), { stdio: "ignore" });
  const running: RunningBroker = {
    url: `${scheme}://127.0.0.1:${port}`,
    port,
    process: launch(),
    async restart(downMs = 500) {
      await stopProcess(running.process, "SIGKILL");
      await new Promise((r) => setTimeout(r, downMs));
      running.process = launch();
      await waitForPort(port, 10_000);
    },
    async stop() {
      await stopProcess(running.process, "SIGTERM");
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  await waitForPort(port, 10_000);
  return running;
}

export const startNatsServer = (): Promise<RunningBroker> =>
  serverProcess("nats-server", "nats", (port, dir) => [
    "-a",
    "127.0.0.1",
    "-p",
    String(port),
    "-js",
    "-sd",
    dir,
  ]);

export const startRedisServer = (): Promise<RunningBroker> =>
  serverProcess("redis-server", "redis", (port, dir) => [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--save",
    "",
    "--appendonly",
    "no",
    "--dir",
    dir,
  ]);
