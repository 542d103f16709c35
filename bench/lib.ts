/** Shared pieces of the benchmark: processes, ports, memory readings, reports. */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export const root = path.resolve(__dirname, "..");

// Ports and private brokers come from the test harness, so the bench and the tests start them alike.
export { freePort } from "../test/support/brokers";

/** Resident and peak resident memory of a process, in bytes (Linux /proc). */
export function memoryOf(pid: number): { rss: number; peak: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024;
  return { rss: kb("VmRSS"), peak: kb("VmHWM") };
}

export function build(): void {
  const res = spawnSync(
    process.execPath,
    [require.resolve("typescript/bin/tsc"), "-p", "tsconfig.build.json"],
    {
      cwd: root,
      stdio: "inherit",
    },
  );
  if (res.status !== 0) throw new Error("build failed");
}

export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of ["TRANSPORTER", "CACHER", "MONGO_URI", "SERVICES", "PORT", "DATA_DIR", "NODE_ENV"])
    delete env[k];
  return { ...env, LOG_LEVEL: "warn", NODE_ENV: "development", ...extra };
}

/** `nodeArgs` go to node itself (e.g. --cpu-prof), before the script. */
export function startNode(env: Record<string, string>, nodeArgs: string[] = []): ChildProcess {
  const child = spawn(process.execPath, [...nodeArgs, path.join(root, "dist/bin/start.js")], {
    cwd: root,
    env: cleanEnv(env),
    stdio: ["ignore", "pipe", "inherit"],
  });
  child.stdout?.resume();
  return child;
}

export async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`Timed out waiting for ${what}`);
}

export const tmpDir = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), prefix));

export function machineHeader(mode: string): string {
  return `${os.cpus().length} cores (nproc), ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${mode}; load generator and servers share this machine`;
}

export type Row = Record<string, string | number>;

export interface Section {
  title: string;
  rows: Row[];
}

function markdownTable(rows: Row[]): string[] {
  const cols = Object.keys(rows[0] ?? {});
  return [
    `| ${cols.join(" | ")} |`,
    `|${cols.map(() => "---").join("|")}|`,
    ...rows.map((r) => `| ${cols.map((c) => String(r[c] ?? "")).join(" | ")} |`),
  ];
}

/** Renders the report as Markdown; unless `keep` is false (quick runs), also writes it and its JSON. */
export function writeResults(name: string, header: string, sections: Section[], keep: boolean): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const dir = path.join(root, "bench", "results");
  const md = [
    `# ${name}`,
    "",
    header,
    "",
    ...sections.flatMap((s) => [`## ${s.title}`, "", ...markdownTable(s.rows), ""]),
  ].join("\n");
  if (keep) {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(
      path.join(dir, `${name}-${stamp}.json`),
      `${JSON.stringify({ header, sections }, null, 2)}\n`,
    );
    fs.writeFileSync(path.join(dir, `${name}-${stamp}.md`), md);
  }
  return md;
}
