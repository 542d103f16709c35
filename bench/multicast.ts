/**
 * Multicast case of the notifier issue: 100,000 recipients (about 120,000 device tokens) through
 * firebase-admin to a local fake FCM, reporting the time from the 202 to the job's `done` and the
 * notifier's peak resident memory (targets: ≤ 30 s, ≤ 300 MB). Embedded topology; the fake FCM runs in
 * this (the load generator's) process.
 */
import fs from "node:fs";
import path from "node:path";
import { spawnSync, type ChildProcess } from "node:child_process";
import { startFakeFcm } from "../test/support/fake-fcm";
import { asDeployed, DEPLOYED, sizeFlag } from "../test/support/deployed";
import { bin, cleanEnv, freePort, memoryOf, root, startNode, tmpDir, waitFor } from "./lib";

const MB = 1024 * 1024;

const stop = (p: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (p.exitCode !== null) return resolve();
    p.once("exit", () => resolve());
    p.kill("SIGTERM");
  });

export async function runMulticastBench(quick: boolean): Promise<Record<string, string | number>[]> {
  const recipients = quick ? 5_000 : 100_000;
  const fcm = await startFakeFcm();
  const dataDir = tmpDir("bench-multicast-");
  const port = await freePort();
  const env = {
    DATA_DIR: dataDir,
    PORT: String(port),
    FCM_ENDPOINT: fcm.url,
    FCM_INSECURE_TLS: "true",
    FCM_PROJECT_ID: "bench",
    MULTICAST_MAX_RECIPIENTS: String(recipients),
    // The notifier's options as deployed: without a heap cap V8 let garbage pile up to several hundred
    // MB before collecting (figures: docs/decisions/0035-memory-caps.md).
    ...asDeployed("notifier"),
  };
  const ctl = (...args: string[]) =>
    spawnSync(process.execPath, [bin("ctl"), ...args], {
      cwd: root,
      env: cleanEnv(env),
      encoding: "utf8",
      maxBuffer: 64 * MB,
    });
  let server: ChildProcess | null = null;
  try {
    const seeded = ctl("seed");
    if (seeded.status !== 0) throw new Error(`seed failed: ${seeded.stderr}`);
    const manifest = JSON.parse(seeded.stdout) as { api_keys: { notifications: string } };
    // One token per recipient, a second one for every fifth: about 1.2 tokens per user.
    const userIds = Array.from({ length: recipients }, (_, i) => `bench-user-${i}`);
    const lines: string[] = [];
    userIds.forEach((u, i) => {
      lines.push(`${u} bench-token-${i}-a`);
      if (i % 5 === 0) lines.push(`${u} bench-token-${i}-b`);
    });
    const file = path.join(dataDir, "devices.txt");
    fs.writeFileSync(file, lines.join("\n"));
    const imported = ctl("device", "import", file);
    if (imported.status !== 0) throw new Error(`device import failed: ${imported.stderr}`);

    server = startNode(env);
    await waitFor(
      () => fetch(`http://127.0.0.1:${port}/health`).then((r) => r.status === 200),
      30_000,
      "server",
    );
    const pid = server.pid as number;
    const before = memoryOf(pid).rss;
    const t0 = Date.now();
    const accepted = await fetch(`http://127.0.0.1:${port}/notifications/send-multicast`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": manifest.api_keys.notifications },
      body: JSON.stringify({
        title: "Bench",
        desc: "A multicast",
        user_ids: userIds,
        keys: { campaign: "bench" },
      }),
    });
    const acceptMs = Date.now() - t0;
    if (accepted.status !== 202)
      throw new Error(`multicast answered ${accepted.status}: ${await accepted.text()}`);
    const { id } = (await accepted.json()) as { id: string };
    let job: Record<string, unknown> = {};
    await waitFor(
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/notifications/${id}`, {
          headers: { "x-api-key": manifest.api_keys.notifications },
        });
        job = (await res.json()) as Record<string, unknown>;
        return job.status === "done" || job.status === "failed";
      },
      600_000,
      "the job to finish",
    );
    const drainMs = Date.now() - t0;
    const mem = memoryOf(pid);
    return [
      {
        case: `multicast (embedded, heap cap ${sizeFlag(DEPLOYED.notifier.nodeOptions, "max-old-space-size")} MB, fake FCM in the load generator)`,
        recipients,
        devices: Number(job.devices),
        sent: Number(job.sent),
        status: String(job.status),
        accept_ms: acceptMs,
        drain_s: (drainMs / 1000).toFixed(1),
        tokens_per_s: Math.round(Number(job.sent) / (drainMs / 1000)),
        notifier_peak_rss_mb: (mem.peak / MB).toFixed(0),
        notifier_peak_growth_mb: ((mem.peak - before) / MB).toFixed(0),
        target: "≤ 30 s, ≤ 300 MB",
      },
    ];
  } finally {
    if (server) await stop(server);
    await fcm.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
