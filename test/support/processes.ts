/**
 * The project's own processes as tests and the bench run them: the compiled entry points under dist/,
 * a clean environment for them, and how to stop or measure one.
 */
import { spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export const root = path.resolve(__dirname, "../..");

/** A compiled entry point: `start` (what `npm start` runs) or `ctl`. */
export const bin = (name: "start" | "ctl"): string => path.join(root, "dist", "bin", `${name}.js`);

/** Node's flags for a server process, as deploy/Dockerfile's CMD and `npm start` give them (decision 0060). */
export const SERVER_NODE_FLAGS = ["--no-allocation-site-pretenuring"];

/** Compiles to dist/ (incremental: a few seconds when little changed); fails with the compiler's output. */
export function buildDist(): void {
  const res = spawnSync(
    process.execPath,
    [require.resolve("typescript/bin/tsc"), "-p", "tsconfig.build.json"],
    {
      cwd: root,
      encoding: "utf8",
    },
  );
  if (res.status !== 0) throw new Error(`build failed:\n${res.stdout}${res.stderr}`);
}

/** Variables that pick a process's topology, place, identity and outside ends: a child never inherits them. */
const PROCESS_VARIABLES = [
  "TRANSPORTER",
  "CACHER",
  "MONGO_URI",
  "SERVICES",
  "PORT",
  "DATA_DIR",
  "NAMESPACE",
  // Credentials are each process's own: the cluster tier gives them.
  "NATS_USER",
  "NATS_PASSWORD",
  "NATS_TLS_DIR",
  "REDIS_USER",
  "REDIS_PASSWORD",
  "MONGO_USER",
  "MONGO_PASSWORD",
  // A developer's own collector must not receive the test processes' spans (tests that trace set it).
  "TRACING_ENDPOINT",
  // Keys go to the processes that run auth, given by the test, never inherited.
  "JWT_PRIVATE_KEYS",
  "REFRESH_TOKEN_SECRETS",
  "JWT_LEGACY_SECRETS",
  "JWT_SECRET",
];

/** This process's environment without PROCESS_VARIABLES, plus what the child is given. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of PROCESS_VARIABLES) delete env[k];
  return { ...env, ...extra };
}

/** Sends `signal` unless the process has already exited, and waits for the exit. */
export async function stopProcess(child: ChildProcess | null, signal: NodeJS.Signals): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill(signal);
  await exited;
}

/**
 * How far a process's resident memory peaks from now on: sets its peak (VmHWM) to its resident memory
 * now (Linux 4.0+, proc(5)), so that the peak read later is of what happened since, not of its start.
 * The reader gives the growth in bytes.
 */
export function peakGrowthFrom(pid: number): () => number {
  fs.writeFileSync(`/proc/${pid}/clear_refs`, "5");
  const before = memoryOf(pid).rss;
  return () => memoryOf(pid).peak - before;
}

/** Resident and peak resident memory of a process, in bytes (Linux /proc). */
export function memoryOf(pid: number): { rss: number; peak: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024;
  return { rss: kb("VmRSS"), peak: kb("VmHWM") };
}
