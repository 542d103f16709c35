// Tier: one process only (the built entry point started on a folder it cannot write).
/**
 * In the shipped image the root filesystem is read-only and only declared volumes are writable: a
 * process whose folder is not one says so at start in one line naming the setting, and exits 1 (no
 * stack trace, nothing started). Real processes of the built entry point, as the image runs them. The
 * folder is made unwritable by putting it under a regular file (ENOTDIR), which holds for root too.
 */
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { bin, buildDist, childEnv, root } from "../support/processes";

beforeAll(() => buildDist(), 120_000);

let tmp: string;
let blocked: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "rounds-unwritable-"));
  blocked = path.join(tmp, "a-file");
  fs.writeFileSync(blocked, "not a folder");
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Development settings: what is checked here comes before the broker starts, and so before any seeding. */
const quiet = {
  NODE_ENV: "development",
  HOST: "127.0.0.1",
  PORT: "0",
  LOG_LEVEL: "warn",
};

function start(env: Record<string, string>) {
  return spawnSync(process.execPath, [bin("start")], {
    cwd: root,
    // LOG_LEVEL info: a broker that started anyway would say so on stdout.
    env: childEnv({ ...quiet, LOG_LEVEL: "info", ...env }),
    encoding: "utf8",
    timeout: 60_000,
  });
}

const lines = (text: string) => text.split("\n").filter((l) => l.trim() !== "");

describe("a folder the process cannot write", () => {
  it("when the stores service starts with an unwritable DATA_DIR, then one line names DATA_DIR and it exits 1", () => {
    const dataDir = path.join(blocked, "data");
    const res = start({ SERVICES: "stores", DATA_DIR: dataDir });
    expect(res.status).toBe(1);
    expect(lines(res.stderr)).toEqual([
      expect.stringMatching(new RegExp(`^Start-up failed: DATA_DIR: ${dataDir} is not writable .*ENOTDIR`)),
    ]);
    expect(res.stderr).not.toMatch(/\n\s+at /);
    // Nothing started: no broker line before the refusal.
    expect(res.stdout).not.toMatch(/Moleculer|BROKER/);
  });

  it("when only the pictures' folder DATA_DIR/media cannot be made, then the line names it under DATA_DIR and it exits 1", () => {
    const dataDir = path.join(tmp, "data");
    fs.mkdirSync(dataDir);
    fs.writeFileSync(path.join(dataDir, "media"), "not a folder");
    const res = start({ SERVICES: "stores", DATA_DIR: dataDir });
    expect(res.status).toBe(1);
    expect(lines(res.stderr)).toEqual([
      expect.stringMatching(new RegExp(`^Start-up failed: DATA_DIR: ${dataDir}/media is not writable`)),
    ]);
  });

  it("when the gateway alone starts with an unwritable DATA_DIR, then it does not need the folder and serves", async () => {
    const child = spawn(process.execPath, [bin("start")], {
      cwd: root,
      env: childEnv({ ...quiet, SERVICES: "gateway", DATA_DIR: path.join(blocked, "data") }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    try {
      await Promise.race([
        new Promise<void>((resolve) => child.stdout.on("data", () => /API: /.test(out) && resolve())),
        exited.then(() => undefined),
      ]);
      expect(err).not.toMatch(/Start-up failed/);
      expect(out).toMatch(/API: http:\/\/localhost:\d+/);
    } finally {
      child.kill("SIGTERM");
      await exited;
    }
  });
});
