// Tier: one process only (the entry points started as the operator starts them, on an embedded DATA_DIR).
/**
 * The operator's path: `ctl seed`, `ctl token`, and `start` on an empty DATA_DIR, as real processes on a
 * real embedded store (files under a temporary DATA_DIR).
 */
import { contractFetch } from "../support/contract";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { bin, buildDist, childEnv, root } from "../support/processes";

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

const tmpDirs: string[] = [];
const tmp = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rounds-cli-"));
  tmpDirs.push(dir);
  return dir;
};
afterAll(() => tmpDirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

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

  it("when a command is wrong or incomplete, then it prints the usage and exits 2", () => {
    const res = ctl(dataDir, "apikey", "add");
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(/--scope is required/);
    expect(res.stderr).toMatch(/Usage/);
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

    // While the server holds DATA_DIR, the CLI refuses to open it (single-process embedded store).
    const clash = ctl(dataDir, "token", manifest.users.alice.id);
    expect(clash.status).toBe(1);
    expect(clash.stderr).toMatch(/in use by process/);
    const reset = ctl(dataDir, "seed", "--reset");
    expect(reset.status).toBe(1);
    expect(reset.stderr).toMatch(/in use by process/);
    const still = await contractFetch(`${url}/rounds/${manifest.rounds.open}`, {
      headers: { authorization: `Bearer ${manifest.users.alice.access_token}` },
    });
    expect(still.status).toBe(200);

    child.kill("SIGTERM");
    await new Promise((r) => child!.once("exit", r));
    expect(fs.existsSync(path.join(dataDir, "db", ".lock"))).toBe(false);
  }, 60_000);
});
