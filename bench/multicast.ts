/**
 * Multicast case of the notifier issue: 100,000 recipients (about 120,000 device tokens) through
 * firebase-admin to a local fake FCM, reporting the time from the request to the job's `done` and the
 * peak resident memory of each process (targets: ≤ 30 s, ≤ 300 MB). Embedded: one process. Distributed:
 * the integration tier's cluster (gateway and each service its own process over a private nats-server
 * with its default settings, so `max_payload` is 1 MB, and Redis), the recipients crossing from the
 * gateway to the notifier in pages (docs/decisions/0032-job-queue.md). Every process runs as
 * deployed (heap cap); the fake FCM runs in this (the load generator's) process.
 */
import fs from "node:fs";
import path from "node:path";
import { spawnSync, type ChildProcess } from "node:child_process";
import { call } from "../shared/contracts";
import { pagesOf } from "../shared/contracts/paging";
import { seed } from "../shared/ops/seed";
import { startCluster } from "../test/support/cluster";
import { startFakeFcm, type FakeFcm } from "../test/support/fake-fcm";
import { asDeployed, deployedProcessEnv, DEPLOYED, sizeFlag } from "../test/support/deployed";
import { bin, cleanEnv, freePort, memoryOf, root, startNode, tmpDir, waitFor } from "./lib";
import type { Topology } from "./systems";
import { BENCH_LIMITS } from "./limits";

const MB = 1024 * 1024;

const stop = (p: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (p.exitCode !== null) return resolve();
    p.once("exit", () => resolve());
    p.kill("SIGTERM");
  });

/** One token per recipient, a second one for every fifth: about 1.2 tokens per user. */
function directory(recipients: number): { userIds: string[]; devices: { user_id: string; token: string }[] } {
  const userIds = Array.from({ length: recipients }, (_, i) => `bench-user-${i}`);
  const devices: { user_id: string; token: string }[] = [];
  userIds.forEach((u, i) => {
    devices.push({ user_id: u, token: `bench-token-${i}-a` });
    if (i % 5 === 0) devices.push({ user_id: u, token: `bench-token-${i}-b` });
  });
  return { userIds, devices };
}

interface Target {
  baseUrl: string;
  apiKey: string;
  /** The processes whose memory is reported, by name. */
  pids: Record<string, number>;
}

/** Sends the multicast, waits for its end; the row of the case. */
async function measure(
  topology: Topology,
  target: Target,
  userIds: string[],
): Promise<Record<string, string | number>> {
  await new Promise((r) => setTimeout(r, 500));
  const before = Object.fromEntries(
    Object.entries(target.pids).map(([name, pid]) => [name, memoryOf(pid).rss]),
  );
  const t0 = Date.now();
  const accepted = await fetch(`${target.baseUrl}/notifications/send-multicast`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": target.apiKey },
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
      const res = await fetch(`${target.baseUrl}/notifications/${id}`, {
        headers: { "x-api-key": target.apiKey },
      });
      job = (await res.json()) as Record<string, unknown>;
      return job.status === "done" || job.status === "failed";
    },
    600_000,
    "the job to finish",
  );
  const drainMs = Date.now() - t0;
  const peaks = Object.fromEntries(
    Object.entries(target.pids).map(([name, pid]) => [name, memoryOf(pid).peak]),
  );
  const notifier = target.pids.notifier;
  const row: Record<string, string | number> = {
    case: `multicast (${topology}, heap cap ${sizeFlag(DEPLOYED.notifier.nodeOptions, "max-old-space-size")} MB, fake FCM in the load generator)`,
    topology,
    recipients: userIds.length,
    devices: Number(job.devices),
    sent: Number(job.sent),
    status: String(job.status),
    accept_ms: acceptMs,
    drain_s: (drainMs / 1000).toFixed(1),
    tokens_per_s: Math.round(Number(job.sent) / (drainMs / 1000)),
    notifier_peak_rss_mb: (memoryOf(notifier).peak / MB).toFixed(0),
    notifier_peak_growth_mb: ((peaks.notifier - before.notifier) / MB).toFixed(0),
    target: "≤ 30 s, ≤ 300 MB",
  };
  // Every process's peak, distributed (embedded, the notifier's is the one process's).
  if (Object.keys(target.pids).length > 1) {
    row.peak_rss_mb = Object.entries(peaks)
      .map(([name, peak]) => `${name} ${(peak / MB).toFixed(0)}`)
      .join(", ");
  }
  return row;
}

async function embedded(recipients: number, fcm: FakeFcm): Promise<Record<string, string | number>> {
  const dataDir = tmpDir("bench-multicast-");
  const port = await freePort();
  const env = {
    DATA_DIR: dataDir,
    PORT: String(port),
    FCM_ENDPOINT: fcm.url,
    MULTICAST_MAX_RECIPIENTS: String(recipients),
    // The notifier's options as deployed: without a heap cap V8 let garbage pile up to several hundred
    // MB before collecting (figures: docs/decisions/0060-node-24-production.md).
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
    const { userIds, devices } = directory(recipients);
    const file = path.join(dataDir, "devices.txt");
    fs.writeFileSync(file, devices.map((d) => `${d.user_id} ${d.token}`).join("\n"));
    const imported = ctl("device", "import", file);
    if (imported.status !== 0) throw new Error(`device import failed: ${imported.stderr}`);

    server = startNode(env);
    const baseUrl = `http://127.0.0.1:${port}`;
    await waitFor(() => fetch(`${baseUrl}/health`).then((r) => r.status === 200), 30_000, "server");
    const pid = server.pid as number;
    return await measure(
      "embedded",
      { baseUrl, apiKey: manifest.api_keys.notifications, pids: { notifier: pid } },
      userIds,
    );
  } finally {
    if (server) await stop(server);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function distributed(recipients: number, fcm: FakeFcm): Promise<Record<string, string | number>> {
  // Embedded stores per process, whatever MONGO_URI says: results stay comparable from one run to the next.
  const cluster = await startCluster({
    store: "embedded",
    processEnv: deployedProcessEnv(),
    env: {
      ...BENCH_LIMITS,
      FCM_ENDPOINT: fcm.url,
      MULTICAST_MAX_RECIPIENTS: String(recipients),
    },
  });
  try {
    const manifest = await seed(cluster.client, cluster.baseUrl);
    const { userIds, devices } = directory(recipients);
    for (const page of pagesOf(devices, 10_000))
      await call(cluster.client, "users.importDevices", { devices: page });
    const pids = Object.fromEntries(
      [...cluster.processes.values()].map((p) => [p.name, p.child?.pid as number]),
    );
    return await measure(
      "distributed",
      { baseUrl: cluster.baseUrl, apiKey: manifest.api_keys.notifications, pids },
      userIds,
    );
  } finally {
    await cluster.stop();
  }
}

export async function runMulticastBench(
  quick: boolean,
  topologies: Topology[] = ["embedded"],
): Promise<Record<string, string | number>[]> {
  const recipients = quick ? 5_000 : 100_000;
  const fcm = await startFakeFcm();
  const rows: Record<string, string | number>[] = [];
  try {
    if (topologies.includes("embedded")) rows.push(await embedded(recipients, fcm));
    if (topologies.includes("distributed")) rows.push(await distributed(recipients, fcm));
  } finally {
    await fcm.close();
  }
  return rows;
}
