/**
 * What `npm start` and the built server do by default, as processes (the same in both topologies: run
 * once, in the `security` project): they listen on 127.0.0.1 unless HOST says otherwise, the admin
 * socket is the server's own user's alone, and production refuses a published key with one line naming
 * the setting.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { freePort } from "../support/brokers";
import { bin, buildDist, childEnv, root, stopProcess } from "../support/processes";
import { topology } from "../support/system";
import { newRefreshSecret, newSigningKeyPem } from "../support/token-keys";

const describeOnce = topology === "embedded" ? describe : describe.skip;

const dirs: string[] = [];
const tmp = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rounds-start-"));
  dirs.push(dir);
  return dir;
};
let children: ChildProcess[] = [];
afterEach(async () => {
  await Promise.all(children.map((c) => stopProcess(c, "SIGKILL")));
  children = [];
});
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

/** This host's first IPv4 address that is not loopback (null on a host without one). */
const outsideAddress = (): string | null =>
  Object.values(os.networkInterfaces())
    .flat()
    .find((i) => i && i.family === "IPv4" && !i.internal)?.address ?? null;

const answers = (host: string, port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });

async function waitUntilAnswering(port: number, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (await answers("127.0.0.1", port)) return;
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing answered on 127.0.0.1:${port}\n${log()}`);
}

function start(env: Record<string, string>): { child: ChildProcess; log: () => string; dataDir: string } {
  let out = "";
  const dataDir = tmp();
  const childEnvironment = childEnv({
    NODE_ENV: "development",
    LOG_LEVEL: "warn",
    DATA_DIR: dataDir,
    ...env,
  });
  if (env.HOST === undefined) delete childEnvironment.HOST;
  const child = spawn(process.execPath, [bin("start")], { cwd: root, env: childEnvironment });
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  children.push(child);
  return { child, log: () => out, dataDir };
}

/** Sends one line to the Unix socket at `file` and reads the answer until the server closes. */
const askSocket = (file: string, line: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const socket = net.connect(file);
    let out = "";
    socket.on("data", (d) => (out += d));
    socket.on("close", () => resolve(out));
    socket.on("error", reject);
    socket.write(line);
  });

describeOnce("start defaults", () => {
  beforeAll(() => buildDist(), 120_000);

  it("when npm start runs without HOST, then the gateway, the metrics and the health server listen on 127.0.0.1 only", async () => {
    const [port, metrics, health] = [await freePort(), await freePort(), await freePort()];
    const outside = outsideAddress();
    const all = start({ PORT: String(port), METRICS_PORT: String(metrics) });
    // A process without the gateway serves /health on HEALTH_PORT.
    const alone = start({ SERVICES: "settings", HEALTH_PORT: String(health) });
    await waitUntilAnswering(port, all.child, all.log);
    await waitUntilAnswering(metrics, all.child, all.log);
    await waitUntilAnswering(health, alone.child, alone.log);
    if (outside) {
      for (const p of [port, metrics, health]) {
        expect({ port: p, outside: await answers(outside, p) }).toEqual({ port: p, outside: false });
      }
    }
  }, 90_000);

  it("when npm start runs embedded, then its admin socket is its own user's alone (0600) and runs only the CLI's commands", async () => {
    const port = await freePort();
    const server = start({ PORT: String(port) });
    await waitUntilAnswering(port, server.child, server.log);
    const file = path.join(server.dataDir, "admin.sock");
    const deadline = Date.now() + 10_000;
    while (!fs.existsSync(file) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await askSocket(file, '{"command":"shutdown"}\n'))).toEqual({
      ok: false,
      error: expect.objectContaining({ message: 'unknown command "shutdown"' }),
    });
    // A field the command does not name (a year-long token) never reaches the action.
    const manifest = JSON.parse(fs.readFileSync(path.join(server.dataDir, "demo-manifest.json"), "utf8"));
    const request = {
      command: "token",
      params: { user_id: manifest.users.alice.id, access_ttl_seconds: 31_536_000 },
    };
    const answer = JSON.parse(await askSocket(file, `${JSON.stringify(request)}\n`));
    expect(answer.ok).toBe(true);
    expect(answer.result.expires_at - Date.now() / 1000).toBeLessThan(24 * 3600);
    expect(await answers("127.0.0.1", port)).toBe(true);
  }, 90_000);

  it("when production starts with the Kubernetes placeholder, then it refuses with one line naming the setting", () => {
    const res = spawnSync(process.execPath, [bin("start")], {
      cwd: root,
      encoding: "utf8",
      timeout: 30_000,
      env: childEnv({
        NODE_ENV: "production",
        SERVICES: "auth",
        DATA_DIR: tmp(),
        JWT_PRIVATE_KEYS: newSigningKeyPem(),
        REFRESH_TOKEN_SECRETS: "replace-me-with-at-least-32-random-characters",
      }),
    });
    expect(res.status).toBe(1);
    expect(res.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(
        /^Start-up failed: REFRESH_TOKEN_SECRETS: the first secret appears in the repository/,
      ),
    ]);
  });

  it("when production still has JWT_SECRET, then it refuses with one line telling what replaced it", () => {
    const res = spawnSync(process.execPath, [bin("start")], {
      cwd: root,
      encoding: "utf8",
      timeout: 30_000,
      env: childEnv({
        NODE_ENV: "production",
        SERVICES: "auth",
        DATA_DIR: tmp(),
        JWT_SECRET: newRefreshSecret(),
        JWT_PRIVATE_KEYS: newSigningKeyPem(),
        REFRESH_TOKEN_SECRETS: newRefreshSecret(),
      }),
    });
    expect(res.status).toBe(1);
    expect(res.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^Start-up failed: JWT_SECRET is no longer read: JWT_PRIVATE_KEYS \(auth only\)/),
    ]);
  });
});
