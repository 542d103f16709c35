/**
 * Private message brokers for the integration tier: a nats-server with JetStream on a free port and a
 * temporary directory. Missing binaries fail the test under CI=true (never a silent skip).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

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
  process: ChildProcess;
  stop(): Promise<void>;
}

export async function startNatsServer(): Promise<RunningBroker> {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "it-nats-"));
  const child = spawn(
    binary("nats-server") as string,
    ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir],
    {
      stdio: "ignore",
    },
  );
  await waitForPort(port, 10_000);
  return {
    url: `nats://127.0.0.1:${port}`,
    process: child,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        await new Promise((r) => child.once("exit", r));
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function startRedisServer(): Promise<RunningBroker> {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "it-redis-"));
  const child = spawn(
    binary("redis-server") as string,
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
    { stdio: "ignore" },
  );
  await waitForPort(port, 10_000);
  return {
    url: `redis://127.0.0.1:${port}`,
    process: child,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        await new Promise((r) => child.once("exit", r));
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
