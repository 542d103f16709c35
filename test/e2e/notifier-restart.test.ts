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
import { BATCH_CONCURRENCY, BATCH_SIZE } from "../../services/notifier/deliver";

/** More batches than are in flight at once, so that a crash lands mid-job with work still to start. */
const TOKENS = BATCH_SIZE * (BATCH_CONCURRENCY + 2);

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

  // Once a batch is recorded sent (the job's count), crash with others in flight or still to start.
  const jobOf = async () =>
    (await (
      await contractFetch(`http://127.0.0.1:${port}/notifications/${id}`, {
        headers: { "x-api-key": manifest.api_keys.notifications },
      })
    ).json()) as { sent: number };
  const deadline = Date.now() + 30_000;
  let recorded = 0;
  while (recorded < BATCH_SIZE && Date.now() < deadline) {
    recorded = (await jobOf()).sent;
    if (recorded < BATCH_SIZE) await new Promise((r) => setTimeout(r, 20));
  }
  child?.kill("SIGKILL");
  await new Promise((r) => child?.once("exit", r));
  const deliveredBeforeCrash = new Set(fcm.delivered);
  expect(recorded).toBeGreaterThanOrEqual(BATCH_SIZE);
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
  // Batches are runs of the sorted tokens: every batch recorded sent before the crash went out once, so
  // at least as many batches have no token sent twice.
  const sorted = lines.map((l) => l.split(" ")[1]).sort();
  const batches = Array.from({ length: TOKENS / BATCH_SIZE }, (_, i) =>
    sorted.slice(i * BATCH_SIZE, (i + 1) * BATCH_SIZE),
  );
  const sentOnce = batches.filter((b) => b.every((t) => fcm.hits.get(t) === 1));
  expect(sentOnce.length).toBeGreaterThanOrEqual(recorded / BATCH_SIZE);
  // Only the batches in flight at the crash may have been sent twice (at-least-once).
  const resent = [...fcm.hits.values()].filter((n) => n > 1).length;
  expect(resent).toBeLessThanOrEqual(BATCH_CONCURRENCY * BATCH_SIZE);
}, 120_000);
