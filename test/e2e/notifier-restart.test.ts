// Tier: one process only (the embedded store's queue across a kill -9 of the one process).
/**
 * Embedded mode keeps its queue in the store: a job accepted before a crash (kill -9) is picked up when
 * the server starts again, resends no batch already recorded as sent, and loses no recipient.
 */
import { contractFetch } from "../support/contract";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "../support/brokers";
import { bin, buildDist, childEnv, root } from "../support/processes";
import { startFakeFcm, type FakeFcm } from "../support/fake-fcm";

const TOKENS = 1500;

let fcm: FakeFcm;
let dataDir: string;
let port: number;
let child: ChildProcess | undefined;

function env(): NodeJS.ProcessEnv {
  return childEnv({
    NODE_ENV: "development",
    LOG_LEVEL: "warn",
    DATA_DIR: dataDir,
    PORT: String(port),
    FCM_ENDPOINT: fcm.url,
    PUSH_BATCH_CONCURRENCY: "1",
  });
}

const ctl = (...args: string[]) =>
  spawnSync(process.execPath, [bin("ctl"), ...args], { cwd: root, env: env(), encoding: "utf8" });

async function startServer(): Promise<void> {
  child = spawn(process.execPath, [bin("start")], { cwd: root, env: env(), stdio: "ignore" });
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const ok = await contractFetch(`http://127.0.0.1:${port}/health`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("server did not start");
}

beforeAll(async () => {
  buildDist();
  fcm = await startFakeFcm();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "notifier-restart-"));
  port = await freePort();
}, 120_000);

afterAll(async () => {
  if (child && child.exitCode === null) child.kill("SIGKILL");
  await fcm.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

it("when the server is killed mid-job and started again, then the job completes with no recipient lost and no finished batch resent", async () => {
  const seeded = ctl("seed");
  expect(seeded.status).toBe(0);
  const manifest = JSON.parse(seeded.stdout);
  const lines = Array.from(
    { length: TOKENS },
    (_, i) => `bulk-user-${i % 300} ok-restart-${String(i).padStart(5, "0")}`,
  );
  const file = path.join(dataDir, "devices.txt");
  fs.writeFileSync(file, lines.join("\n"));
  const imported = ctl("device", "import", file);
  expect(JSON.parse(imported.stdout)).toEqual({ read: TOKENS, added: TOKENS });

  fcm.delayMs = 150;
  await startServer();
  const userIds = Array.from({ length: 300 }, (_, i) => `bulk-user-${i}`);
  const accepted = await contractFetch(`http://127.0.0.1:${port}/notifications/send-multicast`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": manifest.api_keys.notifications },
    body: JSON.stringify({ title: "Restart", user_ids: userIds }),
  });
  expect(accepted.status).toBe(202);
  const { id } = (await accepted.json()) as { id: string };

  // Let the first batch (500 tokens) finish, then crash in the middle of the next one.
  const deadline = Date.now() + 30_000;
  while (fcm.delivered.length < 600 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  child?.kill("SIGKILL");
  await new Promise((r) => child?.once("exit", r));
  const deliveredBeforeCrash = new Set(fcm.delivered);
  expect(deliveredBeforeCrash.size).toBeGreaterThanOrEqual(500);
  expect(deliveredBeforeCrash.size).toBeLessThan(TOKENS);

  fcm.delayMs = 0;
  await startServer();
  let job: any;
  for (let i = 0; i < 300; i++) {
    const res = await contractFetch(`http://127.0.0.1:${port}/notifications/${id}`, {
      headers: { "x-api-key": manifest.api_keys.notifications },
    });
    job = await res.json();
    if (job.status === "done") break;
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(job).toEqual(expect.objectContaining({ status: "done", devices: TOKENS, sent: TOKENS, failed: 0 }));

  // No recipient lost: every token got through.
  const all = new Set(fcm.delivered);
  expect(all.size).toBe(TOKENS);
  // The batch finished before the crash (tokens sorted, so its 500 come first) was not sent again.
  const firstBatch = lines
    .map((l) => l.split(" ")[1])
    .sort()
    .slice(0, 500);
  firstBatch.forEach((t) => expect(fcm.hits.get(t)).toBe(1));
  // Only the batch in flight at the crash may have been sent twice (at-least-once).
  const resent = [...fcm.hits.values()].filter((n) => n > 1).length;
  expect(resent).toBeLessThanOrEqual(500);
}, 120_000);
