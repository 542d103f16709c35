// Tier: one process only (the entry points started as the operator starts them, on an embedded DATA_DIR).
/**
 * The operator's path: the CLI (`ctl`) and `start`, as real processes on a real embedded store (files
 * under a temporary DATA_DIR): the CLI on the files with the server stopped, through the admin socket
 * beside a running embedded server, and as a node of a cluster (private NATS and Redis).
 */
import { contractFetch } from "../support/contract";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { bin, buildDist, childEnv, root, stopProcess } from "../support/processes";
import { requireBinary } from "../support/brokers";
import { startCluster, type Cluster } from "../support/cluster";

// The compiled entry points, as `npm start` and the Docker image run them (built once for this file).
beforeAll(() => buildDist(), 120_000);

function env(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return childEnv({ DATA_DIR: dataDir, NODE_ENV: "development", LOG_LEVEL: "warn", ...extra });
}

function ctl(dataDir: string, ...args: string[]) {
  return spawnSync(process.execPath, [bin("ctl"), ...args], {
    cwd: root,
    env: env(dataDir),
    encoding: "utf8",
    timeout: 60_000,
  });
}

interface CtlResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** `ctl` without blocking this process (a server or a cluster's node in it must keep answering). */
function ctlAsync(childEnvironment: NodeJS.ProcessEnv, ...args: string[]): Promise<CtlResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin("ctl"), ...args], { cwd: root, env: childEnvironment });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("error", reject);
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** A command that worked: exit 0, nothing on stderr (no log, no warning), its answer as JSON. */
function answer(res: CtlResult): any {
  expect({ status: res.status, stderr: res.stderr }).toEqual({ status: 0, stderr: "" });
  return JSON.parse(res.stdout);
}

/** A failure as the operator sees it: the exit status, and one line on stderr with no stack trace. */
function failure(res: CtlResult, status: 1 | 2, message: RegExp): void {
  expect(res.status).toBe(status);
  expect(res.stderr).toMatch(message);
  expect(res.stderr.split("\n").filter(Boolean)).toHaveLength(1);
  expect(res.stderr).not.toMatch(/^\s+at /m);
  expect(res.stdout).toBe("");
}

const tmpDirs: string[] = [];
const tmp = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rounds-cli-"));
  tmpDirs.push(dir);
  return dir;
};
afterAll(() => tmpDirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

/** `npm start` on `dataDir`; resolves once it has printed its URL (it takes CLI commands from then on). */
async function startServer(
  dataDir: string,
  extra: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(process.execPath, [bin("start")], {
    cwd: root,
    env: env(dataDir, { PORT: "0", ...extra }),
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const deadline = Date.now() + 30_000;
  while (!/API:\s+\S+/.test(out) && Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`start exited: ${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const url = /API:\s+(\S+)/.exec(out)?.[1];
  if (!url) throw new Error(`start printed no URL: ${out}`);
  return { child, url, output: () => out };
}

const socketOf = (dataDir: string) => path.join(dataDir, "admin.sock");

describe("ctl seed and token", () => {
  const dataDir = tmp();
  let manifest: any;

  it("when seeding an empty store, then stdout is one JSON manifest with every fixture", () => {
    const res = ctl(dataDir, "seed");
    expect(res.status).toBe(0);
    manifest = JSON.parse(res.stdout);
    for (const name of ["alice", "bob", "carol", "removed"]) {
      expect(manifest.users[name]).toEqual({
        id: expect.any(String),
        username: expect.any(String),
        access_token: expect.any(String),
        refresh_token: expect.any(String),
      });
    }
    expect(manifest.users.crowd.length).toBeGreaterThanOrEqual(30);
    for (const name of ["open", "full", "ended", "private", "small"])
      expect(typeof manifest.rounds[name]).toBe("string");
    expect(manifest.rounds.needs_attributes).toEqual({
      id: expect.any(String),
      choice_ids: expect.arrayContaining([expect.any(Number)]),
    });
    expect(typeof manifest.stores.alice_store).toBe("number");
    expect(manifest.api_keys).toEqual({ app: expect.any(String), notifications: expect.any(String) });
    expect(JSON.parse(fs.readFileSync(path.join(dataDir, "demo-manifest.json"), "utf8"))).toEqual(manifest);
  });

  it("when seeding again without --reset, then it refuses clearly and keeps the data", () => {
    const res = ctl(dataDir, "seed");
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/--reset/);
    const token = ctl(dataDir, "token", manifest.users.alice.id);
    expect(token.status).toBe(0);
  });

  it("when asked for a token, then it prints a token set for that user", () => {
    const res = ctl(dataDir, "token", manifest.users.bob.id);
    expect(res.status).toBe(0);
    const set = JSON.parse(res.stdout);
    expect(set).toEqual({
      access_token: expect.any(String),
      expires_at: expect.any(Number),
      refresh_token: expect.any(String),
      refresh_token_expires_at: expect.any(Number),
      token_type: "Bearer",
    });
    expect(set.expires_at).toBeGreaterThan(Date.now() / 1000);
  });

  it("when asked for a token of an unknown user, then it fails with a message", () => {
    const res = ctl(dataDir, "token", "no-such-user");
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/User not found/);
  });

  it("when users, friends, keys and versions are managed from the CLI, then each command prints what it did", () => {
    const added = ctl(
      dataDir,
      "user",
      "add",
      "--phone",
      "+15550001",
      "--username",
      "dana",
      "--first",
      "Dana",
    );
    expect(added.status).toBe(0);
    const dana = JSON.parse(added.stdout);
    expect(dana).toEqual(
      expect.objectContaining({ username: "dana", first_name: "Dana", last_name: null, removed: false }),
    );

    expect(JSON.parse(ctl(dataDir, "friends", "add", dana.id, manifest.users.alice.id).stdout)).toEqual({
      created: true,
    });

    const key = JSON.parse(
      ctl(dataDir, "apikey", "add", "--scope", "notifications", "--label", "ops").stdout,
    );
    expect(key).toEqual({
      id: expect.any(String),
      scope: "notifications",
      key: expect.stringMatching(/^ak\./),
    });
    expect(JSON.parse(ctl(dataDir, "apikey", "revoke", key.id).stdout)).toEqual({ revoked: true });

    const version = ctl(
      dataDir,
      "app-version",
      "set",
      "--platform",
      "ios",
      "--current",
      "3.1.0",
      "--min",
      "3.0",
    );
    expect(JSON.parse(version.stdout)).toEqual({
      platform: "ios",
      current_version: "3.1.0",
      min_version: "3.0",
    });
    const badVersion = ctl(
      dataDir,
      "app-version",
      "set",
      "--platform",
      "ios",
      "--current",
      "3.1.0",
      "--min",
      "4.0",
    );
    expect(badVersion.status).toBe(1);
    expect(badVersion.stderr).toMatch(/min_version/);

    const removed = JSON.parse(ctl(dataDir, "user", "remove", dana.id).stdout);
    expect(removed).toEqual(expect.objectContaining({ id: dana.id, removed: true }));
  });

  it("when a command is wrong or incomplete, then one line says so and it exits 2", () => {
    failure(ctl(dataDir, "apikey", "add"), 2, /apikey add: --scope is required; run "ctl apikey add --help"/);
    failure(ctl(dataDir, "token"), 2, /token: needs <user_id>/);
    failure(ctl(dataDir, "seed", "--force"), 2, /Unknown option '--force'/);
    failure(ctl(dataDir, "frobnicate"), 2, /unknown command "frobnicate"/);
    failure(ctl(dataDir), 2, /no command given/);
  });

  it("when a command fails, then one line without a stack trace says why and it exits 1", () => {
    failure(ctl(dataDir, "token", "no-such-user"), 1, /User not found/);
    failure(ctl(dataDir, "device", "import", path.join(dataDir, "missing.txt")), 1, /ENOENT/);
  });

  it("when help is asked, then every command and flag is described on stdout and it exits 0", () => {
    const all = ctl(dataDir, "--help");
    expect(all.status).toBe(0);
    for (const words of [
      "seed",
      "token",
      "user add",
      "user remove",
      "friends add",
      "apikey add",
      "apikey revoke",
    ])
      expect(all.stdout).toContain(words);
    for (const words of [
      "app-version set",
      "device add",
      "device import",
      "--reset",
      "--platform",
      "--avatar",
    ])
      expect(all.stdout).toContain(words);
    const one = ctl(dataDir, "app-version", "set", "--help");
    expect(one.status).toBe(0);
    expect(one.stdout).toMatch(/--platform <platform> +the app's platform \(android, ios, ru_store\)/);
    expect(one.stdout).not.toContain("token <user_id>");
  });

  it("when devices are added and imported with the server stopped, then each is registered on the files", () => {
    const file = path.join(dataDir, "devices.txt");
    const { alice, bob } = manifest.users;
    fs.writeFileSync(file, `${alice.id} tok-a1\n${bob.id} tok-b1\n\nbroken-line\n`);
    expect(answer(ctl(dataDir, "device", "add", alice.id, "tok-a0"))).toEqual({
      user_id: alice.id,
      token: "tok-a0",
    });
    expect(answer(ctl(dataDir, "device", "import", file))).toEqual({ read: 2, added: 2 });
  });

  it("when seeding with --reset, then the store starts over with new ids", () => {
    const res = ctl(dataDir, "seed", "--reset");
    expect(res.status).toBe(0);
    expect(JSON.parse(res.stdout).users.alice.id).not.toBe(manifest.users.alice.id);
  });
});

describe("ctl and start on one DATA_DIR", () => {
  let child: ChildProcess | undefined;
  afterEach(() => {
    if (child && child.exitCode === null) child.kill("SIGKILL");
  });

  it("when ctl prints a token and start then runs on the same DATA_DIR, then the server accepts it: both use the key made at the first start (DATA_DIR/keys, mode 0600)", async () => {
    const dataDir = tmp();
    const manifest = JSON.parse(ctl(dataDir, "seed").stdout);
    const set = JSON.parse(ctl(dataDir, "token", manifest.users.bob.id).stdout);
    const keyFile = path.join(dataDir, "keys", "access-token-key.pem");
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(dataDir, "keys", "refresh-token-secret")).mode & 0o777).toBe(0o600);
    const key = fs.readFileSync(keyFile, "utf8");

    child = spawn(process.execPath, [bin("start")], { cwd: root, env: env(dataDir, { PORT: "0" }) });
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    const deadline = Date.now() + 30_000;
    while (!/API: /.test(out) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const url = /API:\s+(\S+)/.exec(out)?.[1];
    const res = await contractFetch(`${url}/users/friends`, {
      headers: { authorization: `Bearer ${set.access_token}` },
    });
    expect(res.status).toBe(200);
    const refreshed = await contractFetch(`${url}/auth/refresh-token`, {
      method: "POST",
      headers: { authorization: `Bearer ${set.access_token}`, "content-type": "application/json" },
      body: JSON.stringify({ refresh_token: set.refresh_token }),
    });
    expect(refreshed.status).toBe(200);
    // The key was reused, not made again.
    expect(fs.readFileSync(keyFile, "utf8")).toBe(key);
    child.kill("SIGTERM");
    await new Promise((r) => child!.once("exit", r));
  }, 90_000);
});

describe("start on an empty DATA_DIR", () => {
  let child: ChildProcess | undefined;
  afterEach(() => {
    if (child && child.exitCode === null) child.kill("SIGKILL");
  });

  it("when started, then it seeds, writes the manifest, prints URL and curl, and serves the rounds", async () => {
    const dataDir = tmp();
    child = spawn(process.execPath, [bin("start")], {
      cwd: root,
      env: env(dataDir, { PORT: "0" }),
    });
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    const deadline = Date.now() + 30_000;
    while (!/curl -s/.test(out) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const url = /API:\s+(\S+)/.exec(out)?.[1];
    expect(url).toMatch(/^http:\/\/localhost:\d+$/);
    expect(out).toContain(path.join(dataDir, "demo-manifest.json"));
    expect(out).toContain(`${url}/docs`);

    const manifest = JSON.parse(fs.readFileSync(path.join(dataDir, "demo-manifest.json"), "utf8"));
    const res = await contractFetch(`${url}/rounds/${manifest.rounds.open}`, {
      headers: { authorization: `Bearer ${manifest.users.alice.access_token}` },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { id: string }).id).toBe(manifest.rounds.open);

    // The banner's advice holds while it runs: the CLI renews a token through the server.
    expect(out).toContain("renew with: npm run ctl -- token <user_id>");
    const renewed = answer(await ctlAsync(env(dataDir), "token", manifest.users.alice.id));
    const still = await contractFetch(`${url}/rounds/${manifest.rounds.open}`, {
      headers: { authorization: `Bearer ${renewed.access_token}` },
    });
    expect(still.status).toBe(200);

    child.kill("SIGTERM");
    await new Promise((r) => child!.once("exit", r));
    expect(fs.existsSync(path.join(dataDir, "db", ".lock"))).toBe(false);
    expect(fs.existsSync(socketOf(dataDir))).toBe(false);
  }, 60_000);
});

/**
 * Every command, given to a running embedded server through its admin socket, and seen by that server
 * at once (its caches included): the CLI never opens the store the server holds.
 */
async function everyCommand(
  run: (...args: string[]) => Promise<CtlResult>,
  manifest: any,
  url: string,
  workDir: string,
): Promise<void> {
  const { alice, bob } = manifest.users;

  const set = answer(await run("token", bob.id));
  expect(set).toEqual(expect.objectContaining({ access_token: expect.any(String), token_type: "Bearer" }));
  const friends = await contractFetch(`${url}/users/friends`, {
    headers: { authorization: `Bearer ${set.access_token}` },
  });
  expect(friends.status).toBe(200);

  const phone = `+1555${String(Date.now()).slice(-7)}`;
  const dana = answer(
    await run("user", "add", "--phone", phone, "--username", `dana${phone.slice(-7)}`, "--first", "Dana"),
  );
  expect(dana).toEqual(expect.objectContaining({ first_name: "Dana", last_name: null, removed: false }));
  expect(answer(await run("friends", "add", dana.id, alice.id))).toEqual({ created: true });

  const key = answer(await run("apikey", "add", "--scope", "app", "--label", "cli-test"));
  expect(key).toEqual({ id: expect.any(String), scope: "app", key: expect.stringMatching(/^ak\./) });
  expect(
    answer(await run("app-version", "set", "--platform", "ios", "--current", "9.1.0", "--min", "9.0")),
  ).toEqual({
    platform: "ios",
    current_version: "9.1.0",
    min_version: "9.0",
  });
  // The server's gateway takes the new key, and its settings service answers the new versions.
  const appSettings = await contractFetch(`${url}/app-settings?version=8.0&platform=ios`, {
    headers: { "x-api-key": key.key },
  });
  expect(appSettings.status).toBe(200);
  expect(await appSettings.json()).toEqual(
    expect.objectContaining({ is_different: true, update_type: "required" }),
  );
  expect(answer(await run("apikey", "revoke", key.id))).toEqual({ revoked: true });

  expect(answer(await run("device", "add", dana.id, "tok-dana-0"))).toEqual({
    user_id: dana.id,
    token: "tok-dana-0",
  });
  const file = path.join(workDir, `devices-${Date.now()}.txt`);
  fs.writeFileSync(file, `${dana.id} tok-dana-1\n${bob.id} tok-bob-1\n`);
  expect(answer(await run("device", "import", file))).toEqual({ read: 2, added: 2 });

  expect(answer(await run("user", "remove", dana.id))).toEqual(
    expect.objectContaining({ id: dana.id, removed: true }),
  );

  // A failing command: one line, exit 1; a wrong one: one line, exit 2.
  failure(await run("token", "no-such-user"), 1, /User not found/);
  failure(
    await run("app-version", "set", "--platform", "ios", "--current", "1.0", "--min", "2.0"),
    1,
    /min_version/,
  );
  failure(await run("apikey", "add", "--scope", "root"), 2, /--scope must be one of app, notifications/);
}

describe("ctl beside a running embedded server", () => {
  let child: ChildProcess | null = null;
  afterEach(() => stopProcess(child, "SIGKILL"));

  it("when the server runs, then every command reaches it through DATA_DIR/admin.sock (mode 0600), and the socket goes with the server", async () => {
    const dataDir = tmp();
    const server = await startServer(dataDir);
    child = server.child;
    const stat = fs.statSync(socketOf(dataDir));
    expect(stat.isSocket()).toBe(true);
    expect(stat.mode & 0o777).toBe(0o600);
    const manifest = JSON.parse(fs.readFileSync(path.join(dataDir, "demo-manifest.json"), "utf8"));

    await everyCommand((...args) => ctlAsync(env(dataDir), ...args), manifest, server.url, dataDir);

    // Seeding a seeded store is refused as with the server stopped; --reset would delete its files.
    failure(await ctlAsync(env(dataDir), "seed"), 1, /already holds the demo dataset/);
    failure(await ctlAsync(env(dataDir), "seed", "--reset"), 1, /seed --reset .* stop it first/);

    await stopProcess(child, "SIGTERM");
    expect(child.exitCode).toBe(0);
    expect(fs.existsSync(socketOf(dataDir))).toBe(false);
    // Stopped, the CLI works on the files again.
    expect(answer(await ctlAsync(env(dataDir), "token", manifest.users.alice.id)).token_type).toBe("Bearer");
  }, 120_000);

  it("when the server was killed, then its stale socket blocks neither the CLI nor the next start", async () => {
    const dataDir = tmp();
    const first = await startServer(dataDir);
    child = first.child;
    const manifest = JSON.parse(fs.readFileSync(path.join(dataDir, "demo-manifest.json"), "utf8"));
    await stopProcess(child, "SIGKILL");
    expect(fs.statSync(socketOf(dataDir)).isSocket()).toBe(true);

    // Nobody answers on it: the CLI opens the files itself.
    expect(answer(await ctlAsync(env(dataDir), "token", manifest.users.alice.id)).token_type).toBe("Bearer");

    const second = await startServer(dataDir);
    child = second.child;
    expect(fs.statSync(socketOf(dataDir)).mode & 0o777).toBe(0o600);
    const set = answer(await ctlAsync(env(dataDir), "token", manifest.users.carol.id));
    const res = await contractFetch(`${second.url}/users/friends`, {
      headers: { authorization: `Bearer ${set.access_token}` },
    });
    expect(res.status).toBe(200);
  }, 90_000);

  it("when the server holding the store takes no commands (its socket gone, as with an older version), then the CLI says in one line to stop it", async () => {
    const dataDir = tmp();
    const server = await startServer(dataDir);
    child = server.child;
    fs.rmSync(socketOf(dataDir));
    const manifest = JSON.parse(fs.readFileSync(path.join(dataDir, "demo-manifest.json"), "utf8"));
    failure(
      await ctlAsync(env(dataDir), "token", manifest.users.alice.id),
      1,
      /in use by process \d+, which takes no commands on .*admin\.sock; stop it first/,
    );
  }, 60_000);
});

describe("ctl as a node of a cluster", () => {
  const run = requireBinary("nats-server") && requireBinary("redis-server");
  let cluster: Cluster | null = null;
  afterAll(() => cluster?.stop(), 60_000);

  /** The CLI as an operator runs it against the cluster: its address, namespace and the ops user. */
  const clusterCtl = (...args: string[]) =>
    ctlAsync(
      childEnv({
        TRANSPORTER: cluster!.nats.url,
        CACHER: cluster!.redis.url,
        NAMESPACE: cluster!.namespace,
        ...cluster!.nats.credentials("ops"),
        ...cluster!.redis.credentials("ops"),
        DATA_DIR: tmp(),
        NODE_ENV: "test",
        LOG_LEVEL: "warn",
      }),
      ...args,
    );

  (run ? it : it.skip)(
    "when TRANSPORTER names the cluster, then every command joins it and works, and no service process opens an admin socket",
    async () => {
      cluster = await startCluster();
      const manifest = answer(await clusterCtl("seed"));
      expect(manifest.users.alice.id).toEqual(expect.any(String));
      await everyCommand(clusterCtl, manifest, cluster.baseUrl, tmp());
      failure(await clusterCtl("seed"), 1, /already holds the demo dataset/);
      for (const proc of cluster.processes.values())
        expect(fs.existsSync(socketOf(proc.dataDir))).toBe(false);
    },
    240_000,
  );
});
