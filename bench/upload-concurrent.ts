/**
 * One-off experiment (decision 0025, 2026-12-07): the peak growth of the gateway and of the process
 * running the stores when N uploads of MB each run at once, distributed over a private NATS, each
 * process with its options as deployed, no forced GC. At most 4 uploads a caller (UPLOADS_MAX_PER_CALLER)
 * and two seeded stores (alice's, bob's): N ≤ 8. `N=8 MB=48 tsx bench/upload-concurrent.ts` (on
 * production's Node); writes bench/results/upload-concurrent-<time>.md. Kept in git history only.
 */
import { startDistributedUploads, upload, MB } from "./upload";
import { execFileSync } from "node:child_process";
import { build, machineHeader, peakGrowthFrom, writeResults, type Row } from "./lib";

async function once(n: number, mb: number): Promise<Row> {
  const sys = await startDistributedUploads();
  try {
    await new Promise((r) => setTimeout(r, 500));
    const gateway = peakGrowthFrom(sys.procs.gateway.pid!);
    const stores = peakGrowthFrom(sys.procs.stores.pid!);
    const { users, stores: owned } = sys.manifest;
    const asBob = {
      ...sys.manifest,
      users: { ...users, alice: users.bob },
      stores: { ...owned, alice_store: owned.blogger_store },
    };
    const t0 = Date.now();
    const res = await Promise.all(
      Array.from({ length: n }, (_, i) => upload(sys.port, i % 2 === 0 ? sys.manifest : asBob, mb * MB)),
    );
    return {
      uploads_at_once: n,
      picture_mb: mb,
      statuses: res.map((r) => r.status).join(", "),
      seconds: ((Date.now() - t0) / 1000).toFixed(1),
      gateway_peak_growth_mb: (gateway() / MB).toFixed(1),
      stores_peak_growth_mb: (stores() / MB).toFixed(1),
    };
  } finally {
    await sys.stop();
  }
}

const commit = () => execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();

async function main(): Promise<void> {
  build();
  const mb = Number(process.env.MB ?? 48);
  const rows: Row[] = [];
  for (const n of (process.env.N ?? "1,4,8").split(",").map(Number)) rows.push(await once(n, mb));
  const header = `${machineHeader("concurrent uploads, distributed")}; commit ${commit()}`;
  process.stdout.write(
    writeResults("upload-concurrent", header, [{ title: "Concurrent uploads", rows }], true),
  );
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${String(err)}\n`);
    process.exit(1);
  },
);
