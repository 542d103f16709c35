/**
 * Private message brokers for the integration tier: a nats-server with JetStream on a free port and a
 * temporary directory. Missing binaries fail the test under CI=true (never a silent skip).
 *
 * Given the namespace, NATS runs with the users and permissions deployments run with
 * (shared/ops/nats-auth.ts renders its configuration) and Redis with their ACL users
 * (shared/ops/store-users.ts), each user with a fresh password: `credentials(user)` gives a process
 * its own, `connectOptions(user)` a raw nats.js connection.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { ConnectionOptions } from "nats";
import { ALL_USERS, passwordEnvOf, renderNatsConf, type NatsAuthOptions } from "../../shared/ops/nats-auth";
import { REDIS_USERS, redisRulesOf } from "../../shared/ops/store-users";
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
  /** Each user's password (empty when the server runs without users: anyone may connect). */
  passwords: Record<string, string>;
  /** The settings that give a process the credentials of `user` (none without users). */
  credentials(user: string): Record<string, string>;
  /** nats.js options connecting as `user` (default ops). */
  connectOptions(user?: string): ConnectionOptions;
  /** kill -9, wait `downMs`, start again on the same port and data folder. */
  restart(downMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** A password nats-server's configuration reads as a string (letters and digits, a letter first). */
const newPassword = () => `p${crypto.randomBytes(16).toString("hex")}`;

async function serverProcess(
  name: string,
  scheme: string,
  args: (port: number, dir: string) => string[],
  auth: {
    passwords: Record<string, string>;
    env: (user: string) => Record<string, string>;
    serverEnv?: Record<string, string>;
  } = {
    passwords: {},
    env: () => ({}),
  },
): Promise<RunningBroker> {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `it-${name}-`));
  const launch = () =>
    spawn(binary(name) as string, args(port, dir), {
      stdio: "ignore",
      env: { ...process.env, ...auth.serverEnv },
    });
  const url = `${scheme}://127.0.0.1:${port}`;
  const running: RunningBroker = {
    url,
    port,
    passwords: auth.passwords,
    credentials: (user) => (auth.passwords[user] ? auth.env(user) : {}),
    connectOptions: (user = "ops") => ({
      servers: url,
      ...(auth.passwords[user] ? { user, pass: auth.passwords[user] } : {}),
    }),
    process: launch(),
    async restart(downMs = 500) {
      await stopProcess(running.process, "SIGKILL");
      await new Promise((r) => setTimeout(r, downMs));
      running.process = launch();
      await waitForPort(port, 10_000);
    },
    async stop() {
      await stopProcess(running.process, "SIGTERM");
      // Permission violations are in NATS's log: kept with the processes' (test/support/cluster.ts).
      const keep = process.env.KEEP_CLUSTER_LOGS;
      const log = path.join(dir, `${name}.log`);
      if (keep && fs.existsSync(log)) {
        fs.mkdirSync(keep, { recursive: true });
        fs.copyFileSync(log, path.join(keep, `${path.basename(dir)}.log`));
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  await waitForPort(port, 10_000);
  return running;
}

/**
 * nats-server with JetStream; with `auth`, with the deployments' users and permissions for that
 * namespace (and no anonymous access).
 */
export const startNatsServer = (auth?: NatsAuthOptions): Promise<RunningBroker> => {
  const passwords = auth ? Object.fromEntries(ALL_USERS.map((u) => [u, newPassword()])) : {};
  return serverProcess(
    "nats-server",
    "nats",
    (port, dir) => {
      const base = ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir];
      if (!auth) return base;
      const conf = path.join(dir, "nats.conf");
      if (!fs.existsSync(conf)) {
        fs.writeFileSync(conf, renderNatsConf({ ...auth, listen: `127.0.0.1:${port}`, storeDir: dir }));
      }
      // The configuration holds the address and JetStream's folder (flags would repeat them).
      return ["-c", conf, "-l", path.join(dir, "nats-server.log")];
    },
    {
      passwords,
      env: (user) => ({ NATS_USER: user, NATS_PASSWORD: passwords[user] }),
      serverEnv: Object.fromEntries(ALL_USERS.map((u) => [passwordEnvOf(u), passwords[u]])),
    },
  );
};

/** redis-server; with a namespace, with the deployments' ACL users (the default user off). */
export const startRedisServer = (acl?: { namespace: string }): Promise<RunningBroker> => {
  const passwords = acl ? Object.fromEntries(REDIS_USERS.map((u) => [u, newPassword()])) : {};
  const users = acl
    ? [
        // redis-server joins the words after `--user` into one `user` line of its configuration.
        ...["--user", "default", "off"],
        ...REDIS_USERS.flatMap((u) => [
          "--user",
          u,
          "on",
          `>${passwords[u]}`,
          ...redisRulesOf(u, acl.namespace).split(" "),
        ]),
      ]
    : [];
  return serverProcess(
    "redis-server",
    "redis",
    (port, dir) => [
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
      ...users,
    ],
    { passwords, env: (user) => ({ REDIS_USER: user, REDIS_PASSWORD: passwords[user] }) },
  );
};
