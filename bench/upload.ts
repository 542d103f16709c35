/**
 * Upload case of the store-events issue: one large picture through the gateway, reporting how much the
 * gateway's and the stores service's resident memory grew at its peak (target: at most 32 MB, i.e.
 * streamed, not buffered). Runs embedded (one process) and, when nats-server is installed, distributed
 * (gateway and the other services as separate processes over a private NATS).
 *
 * A process's peak depends on when its garbage collector lets go of the chunks that went through it, so
 * one upload is one noisy sample (docs/performance.md, case 6). Like cases 1–5, the case is
 * measured several times (3; 1 with --quick), each upload on freshly started processes so that none
 * reuses memory an earlier upload made it take, and the median is reported with every sample.
 */
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import type { ChildProcess } from "node:child_process";
import { binary, startNatsServer } from "../test/support/brokers";
import { asDeployed } from "../test/support/deployed";
import { SAME_PROCESS } from "./report";
import { bin, cleanEnv, freePort, peakGrowthFrom, root, startNode, tmpDir, waitFor } from "./lib";
import { spawnSync } from "node:child_process";
import { median } from "./ab";
import type { DemoManifest } from "../shared/ops/seed";

export const MB = 1024 * 1024;

/** Sends a picture of `bytes` as a new event of alice's store; resolves with the answer's status. */
export function upload(
  port: number,
  manifest: DemoManifest,
  bytes: number,
): Promise<{ status: number; ms: number }> {
  const boundary = "----bench-boundary";
  const start = new Date(Date.now() + 86400_000).toISOString();
  const fields = {
    name: "Bench",
    price: "1",
    event_type: "online",
    duration: "60",
    participants_limit: "10",
    start_time: start,
  };
  const head = Buffer.from(
    Object.entries(fields)
      .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
      .join("") +
      `--${boundary}\r\nContent-Disposition: form-data; name="main_picture"; filename="big.png"\r\nContent-Type: image/png\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const chunk = Buffer.alloc(256 * 1024, 0x42);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(chunk);
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const req = http.request(`http://127.0.0.1:${port}/stores/${manifest.stores.alice_store}/events`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${manifest.users.alice.access_token}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": String(head.length + bytes + tail.length),
      },
    });
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: Date.now() - t0 }));
    });
    req.on("error", reject);
    req.write(head);
    let sent = 0;
    const pump = () => {
      while (sent < bytes) {
        const n = Math.min(chunk.length, bytes - sent);
        const piece = sent === 0 ? chunk.subarray(0, n) : Buffer.alloc(n, 0x42);
        sent += n;
        if (!req.write(piece)) return void req.once("drain", pump);
      }
      req.end(tail);
    };
    pump();
  });
}

const stop = (p: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (p.exitCode !== null) return resolve();
    p.once("exit", () => resolve());
    p.kill("SIGTERM");
  });

const health = (port: number) => () => fetch(`http://127.0.0.1:${port}/health`).then((r) => r.status === 200);

async function measure(
  { label, port, manifest, procs }: UploadSystem,
  bytes: number,
): Promise<Record<string, string | number>> {
  await new Promise((r) => setTimeout(r, 500));
  const pids = { gateway: procs.gateway.pid as number, stores: procs.stores.pid as number };
  // Each peak read after the upload is then of the upload, not of the process's start.
  const gatewayGrowth = peakGrowthFrom(pids.gateway);
  const storesGrowth = pids.stores === pids.gateway ? null : peakGrowthFrom(pids.stores);
  const res = await upload(port, manifest, bytes);
  const row: Record<string, string | number> = {
    topology: label,
    picture_mb: bytes / MB,
    status: res.status,
    seconds: (res.ms / 1000).toFixed(2),
    mb_per_s: (bytes / MB / (res.ms / 1000)).toFixed(1),
  };
  row.gateway_peak_growth_mb = (gatewayGrowth() / MB).toFixed(1);
  row.stores_peak_growth_mb = storesGrowth ? (storesGrowth() / MB).toFixed(1) : SAME_PROCESS;
  row.target = "≤ 32 MB growth per process";
  return row;
}

type Sample = Record<string, string | number>;

/** The samples of one topology as one row: medians, with every sample listed. */
function medianRow(samples: Sample[]): Sample {
  const row: Sample = { ...samples[0] };
  const numbers = (key: string) => samples.map((s) => Number(s[key]));
  row.seconds = median(numbers("seconds")).toFixed(2);
  row.mb_per_s = median(numbers("mb_per_s")).toFixed(1);
  row.status = samples.every((s) => s.status === 200) ? 200 : samples.map((s) => s.status).join(", ");
  row.samples = samples.length;
  for (const key of ["gateway_peak_growth_mb", "stores_peak_growth_mb"]) {
    const each = `${key.replace("_mb", "")}_samples_mb`;
    if (samples.some((s) => s[key] === SAME_PROCESS)) {
      row[each] = SAME_PROCESS;
      continue;
    }
    row[key] = median(numbers(key)).toFixed(1);
    row[each] = samples.map((s) => s[key]).join(", ");
  }
  return row;
}

export async function runUploadBench(quick: boolean): Promise<Sample[]> {
  const bytes = Number(process.env.BENCH_UPLOAD_MB ?? (quick ? 5 : 50)) * MB;
  const times = quick ? 1 : 3;
  const embedded: Sample[] = [];
  for (let i = 0; i < times; i++) embedded.push(await sample(startEmbeddedUploads, bytes));
  const rows = [medianRow(embedded)];
  if (!binary("nats-server")) {
    rows.push({
      topology: "distributed",
      picture_mb: bytes / MB,
      status: "skipped: nats-server not installed",
    });
    return rows;
  }
  const distributed: Sample[] = [];
  for (let i = 0; i < times; i++) distributed.push(await sample(startDistributedUploads, bytes));
  rows.push(medianRow(distributed));
  return rows;
}

/** Processes serving uploads, started for one sample; `stop` ends them and removes their data. */
interface UploadSystem {
  label: string;
  port: number;
  manifest: DemoManifest;
  procs: { gateway: ChildProcess; stores: ChildProcess };
  stop(): Promise<void>;
}

/**
 * A fresh embedded server: gateway and stores share one process. `env` is added to its environment,
 * `nodeArgs` go to node.
 */
async function startEmbeddedUploads(
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<UploadSystem> {
  const dataDir = tmpDir("bench-upload-");
  const port = await freePort();
  const proc = startNode(
    {
      // One process runs every service here, a kind no deployment runs: the stores' options, with which
      // its figures compare with the runs from before each service had its own.
      ...asDeployed("stores"),
      PORT: String(port),
      DATA_DIR: dataDir,
      PICTURE_MAX_BYTES: String(1024 * MB),
      ...env,
    },
    nodeArgs,
  );
  const stopAll = async () => {
    await stop(proc);
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    // Two minutes: on a shared, loaded machine a start took over the 30 s allowed before.
    await waitFor(health(port), 120_000, "embedded server");
    await waitFor(async () => fs.existsSync(path.join(dataDir, "demo-manifest.json")), 120_000, "manifest");
    const manifest = JSON.parse(
      fs.readFileSync(path.join(dataDir, "demo-manifest.json"), "utf8"),
    ) as DemoManifest;
    return { label: "embedded", port, manifest, procs: { gateway: proc, stores: proc }, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/**
 * Fresh distributed processes: the gateway, and the services in one other process, over a private
 * NATS; the picture crosses from the gateway to the stores process. `env` is added to both, `nodeArgs`
 * go to node in both.
 */
async function startDistributedUploads(
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<UploadSystem> {
  const nats = await startNatsServer();
  const dirs = [tmpDir("bench-gw-"), tmpDir("bench-svc-")];
  const port = await freePort();
  const common = {
    TRANSPORTER: nats.url,
    NAMESPACE: `bench${process.pid}`,
    PICTURE_MAX_BYTES: String(1024 * MB),
  };
  const gateway = startNode(
    {
      ...common,
      ...asDeployed("gateway"),
      SERVICES: "gateway",
      PORT: String(port),
      DATA_DIR: dirs[0],
      ...env,
    },
    nodeArgs,
  );
  // The services share one process here; the stores service receives the upload: its options.
  const services = startNode(
    {
      ...common,
      ...asDeployed("stores"),
      SERVICES: "auth,users,rounds,stores,settings,notifier",
      DATA_DIR: dirs[1],
      ...env,
    },
    nodeArgs,
  );
  const stopAll = async () => {
    await Promise.all([stop(gateway), stop(services)]);
    await nats.stop();
    dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true }));
  };
  try {
    // Two minutes, as for the embedded server.
    await waitFor(health(port), 120_000, "gateway");
    const seeded = spawnSync(process.execPath, [bin("ctl"), "seed"], {
      cwd: root,
      env: cleanEnv({ ...common, DATA_DIR: tmpDir("bench-ctl-") }),
      encoding: "utf8",
    });
    if (seeded.status !== 0) throw new Error(`seed failed: ${seeded.stderr}`);
    const manifest = JSON.parse(seeded.stdout) as DemoManifest;
    return {
      label: "distributed (NATS)",
      port,
      manifest,
      procs: { gateway, stores: services },
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/** One upload to fresh processes of `start`'s kind. */
async function sample(start: () => Promise<UploadSystem>, bytes: number): Promise<Sample> {
  const system = await start();
  try {
    return await measure(system, bytes);
  } finally {
    await system.stop();
  }
}
