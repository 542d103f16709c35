/**
 * `npx tsx bench/cpu-ab.ts --reps 5 --rounds 3 --seconds 5 --request round
 * <build>[:NAME=value…] <build>[:NAME=value…] …`: the CPU an embedded server spends per request, for
 * builds (a checkout with `dist/` built, e.g. a git worktree of another commit) or settings side by side.
 *
 * Why across restarts: one server process runs a request at a steady cost, but two processes of the same
 * build can differ by 10–20% (JIT and memory layout), more than most changes worth measuring. So each
 * repetition starts every variant afresh on the demo dataset (`npm start`'s seed), drives the same request
 * at each in turn (autocannon, 64 connections, a 1 s warm-up then `--seconds`), `--rounds` times, the
 * order rotating; a variant's figure is the median over its processes of each process's median, with
 * the range. CPU is the server's user and system time from /proc, so a loaded machine slows the rates
 * more than it moves this figure. Linux only. `--node` picks the servers' Node (default: this one).
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { median } from "./ab";
import { cpuMillisOf } from "./cpu";
import { BENCH_LIMITS } from "./limits";

const args = process.argv.slice(2);
const flag = (name: string, fallback: string): string => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const variants = args.filter((a, i) => !a.startsWith("--") && !args[i - 1]?.startsWith("--"));
const nodeBin = flag("node", process.execPath);
const reps = Number(flag("reps", "5"));
const rounds = Number(flag("rounds", "3"));
const seconds = Number(flag("seconds", "5"));
const request = flag("request", "round");

interface Manifest {
  users: { alice: { access_token: string } };
  rounds: { open: string };
  api_keys: { app: string };
}
interface Server {
  variant: string;
  port: number;
  child: ChildProcess;
  manifest: Manifest;
  dataDir: string;
}

/** The server's CPU time so far, in ms (bench/cpu). */
const cpuMs = (pid: number): number => {
  const ms = cpuMillisOf(pid);
  if (ms === undefined) throw new Error(`cannot read the CPU time of process ${pid}`);
  return ms;
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function start(variant: string, port: number): Promise<Server> {
  const [dir, ...settings] = variant.split(":");
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cpu-ab-"));
  const child = spawn(nodeBin, ["dist/bin/start.js"], {
    cwd: dir,
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      DATA_DIR: dataDir,
      LOG_LEVEL: "error",
      ...BENCH_LIMITS,
      ...Object.fromEntries(settings.map((s) => s.split("="))),
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (d: string) => (stderr = (stderr + d).slice(-4000)));
  const manifestFile = path.join(dataDir, "demo-manifest.json");
  // Seeding takes a few seconds, far longer on a loaded machine.
  for (let i = 0; i < 900 && !fs.existsSync(manifestFile) && child.exitCode === null; i++) await sleep(200);
  if (!fs.existsSync(manifestFile)) throw new Error(`${variant} did not start: ${stderr}`);
  for (let i = 0; i < 100; i++) {
    const up = await fetch(`http://127.0.0.1:${port}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    await sleep(200);
  }
  const manifest = JSON.parse(fs.readFileSync(manifestFile, "utf8")) as Manifest;
  return { variant, port, child, manifest, dataDir };
}

function requestOf(s: Server): { path: string; headers: Record<string, string> } {
  const bearer = { authorization: `Bearer ${s.manifest.users.alice.access_token}` };
  if (request === "friends") return { path: "/users/friends", headers: bearer };
  if (request === "settings")
    return {
      path: "/app-settings?version=2.2.0&platform=ios",
      headers: { "x-api-key": s.manifest.api_keys.app },
    };
  return { path: `/rounds/${s.manifest.rounds.open}`, headers: bearer };
}

async function cpuPerRequest(s: Server): Promise<number> {
  const { path: p, headers } = requestOf(s);
  const url = `http://127.0.0.1:${s.port}${p}`;
  await autocannon({ url, headers, connections: 64, duration: 1 });
  const pid = s.child.pid as number;
  const before = cpuMs(pid);
  const out = await autocannon({ url, headers, connections: 64, duration: seconds });
  if (out.non2xx > 0 || out.errors > 0)
    throw new Error(`${s.variant}: ${out.non2xx} non-2xx, ${out.errors} errors`);
  return ((cpuMs(pid) - before) * 1000) / out.requests.total;
}

async function main(): Promise<void> {
  if (variants.length === 0) throw new Error("name at least one build folder (with dist/ built)");
  const perProcess = variants.map((): number[] => []);
  for (let rep = 0; rep < reps; rep++) {
    const servers: Server[] = [];
    try {
      for (const [i, v] of variants.entries()) servers.push(await start(v, 4300 + i));
      const samples = variants.map((): number[] => []);
      for (let round = 0; round < rounds; round++) {
        for (let k = 0; k < servers.length; k++) {
          const i = (k + round + rep) % servers.length;
          samples[i].push(await cpuPerRequest(servers[i]));
        }
      }
      for (const [i, v] of variants.entries()) {
        perProcess[i].push(median(samples[i]));
        console.log(
          `rep ${rep + 1} ${v}: ${median(samples[i]).toFixed(1)} µs CPU/request ` +
            `(rounds ${samples[i].map((x) => x.toFixed(0)).join(", ")}; load ${os.loadavg()[0].toFixed(1)})`,
        );
      }
    } finally {
      for (const s of servers) s.child.kill("SIGTERM");
      await sleep(1500);
      for (const s of servers) fs.rmSync(s.dataDir, { recursive: true, force: true });
    }
  }
  console.log(
    `\nNode ${nodeBin}, ${reps} processes per variant, ${rounds} rounds of ${seconds} s, request ${request}`,
  );
  for (const [i, v] of variants.entries()) {
    const xs = [...perProcess[i]].sort((a, b) => a - b);
    console.log(
      `${v}: ${median(xs).toFixed(1)} µs CPU/request (processes ${xs[0].toFixed(1)}–${xs[xs.length - 1].toFixed(1)})`,
    );
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
