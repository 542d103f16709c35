/**
 * `npx tsx bench/process-cpu.ts --case 1 --process gateway
 * --passes 5 --options "--max-old-space-size=192 --max-semi-space-size=16" --options none …`:
 * the CPU time one process spends per request of a case (distributed, embedded stores), for each set
 * of Node options given to that process, on a fresh cluster each, the sets alternating pass after pass.
 * CPU time (utime + stime from /proc) per request says what the options cost even when the machine is
 * shared and the req/s of a run say more about the neighbours than about the options. The gateway runs
 * with its options as deployed unless it is the process measured. Prints a line per run and writes
 * bench/results/process-cpu-<case>-<process>-<time>.md. Linux only.
 */
import fs from "node:fs";
import path from "node:path";
import { createFixtures } from "./fixtures";
import { planFor, scenarioFactories } from "./http";
import { build, machineHeader, root } from "./lib";
import { startCluster } from "../test/support/cluster";
import { DEPLOYED } from "../test/support/deployed";
import { BENCH_LIMITS } from "./limits";

const args = process.argv.slice(2);
const flagOf = (name: string) => args.flatMap((a, i) => (a === `--${name}` ? [args[i + 1]] : []));

/** CPU milliseconds the process has used (user and system), from /proc/<pid>/stat in clock ticks of 10 ms. */
function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const rssMb = (pid: number) =>
  Math.round(Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024);

interface Run {
  pass: number;
  options: string;
  requests: number;
  rps: number;
  p99: number;
  cpuMsPer1k: number;
  rssMb: number;
  load: string;
}

async function measure(key: string, proc: string, options: string, pass: number): Promise<Run> {
  const full = planFor(false, []).sizes;
  const sizes = {
    ...full,
    spreadRounds: key === "2" ? full.spreadRounds : 0,
    joiners: key === "3" || key === "5" ? full.joiners : 10,
    joinRounds: 1,
    listUsers: key.startsWith("4") ? full.listUsers : 0,
    friendsPerUser: key === "4a" ? full.friendsPerUser : 0,
    paymentsPerUser: key === "4b" ? full.paymentsPerUser : 0,
  };
  const split = (o: string) => o.split(/\s+/).filter(Boolean);
  const nodeArgs: Record<string, string[]> = { gateway: split(DEPLOYED.gateway.nodeOptions) };
  nodeArgs[proc] = split(options);
  const cluster = await startCluster({ store: "embedded", env: BENCH_LIMITS, nodeArgs });
  try {
    const fixtures = await createFixtures(cluster.client, sizes);
    const factory = scenarioFactories(sizes).find(([k]) => k === key)?.[1];
    if (!factory) throw new Error(`no case ${key}`);
    const scenario = factory(fixtures);
    await scenario.record(cluster.baseUrl);
    const pid = cluster.processes.get(proc)?.child?.pid;
    if (!pid) throw new Error(`no process ${proc}`);
    await scenario.measure({ url: cluster.baseUrl, side: "system", round: 0, seconds: 2 });
    const before = cpuMs(pid);
    const r = await scenario.measure({ url: cluster.baseUrl, side: "system", round: 1, seconds: 8 });
    const used = cpuMs(pid) - before;
    return {
      pass,
      options: options || "(none)",
      requests: r.requests,
      rps: Math.round(r.rps),
      p99: r.p99,
      cpuMsPer1k: Math.round((used / r.requests) * 10_000) / 10,
      rssMb: rssMb(pid),
      load: fs.readFileSync("/proc/loadavg", "utf8").split(" ")[0],
    };
  } finally {
    await cluster.stop();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

async function main(): Promise<void> {
  const key = flagOf("case")[0] ?? "1";
  const proc = flagOf("process")[0] ?? "gateway";
  const passes = Number(flagOf("passes")[0] ?? 3);
  const sets = flagOf("options").map((o) => (o === "none" ? "" : o));
  if (sets.length === 0) throw new Error('give at least one --options "<node options>" (or none)');
  build();
  const runs: Run[] = [];
  for (let pass = 1; pass <= passes; pass++) {
    for (const options of sets) {
      const run = await measure(key, proc, options, pass);
      process.stderr.write(`${JSON.stringify(run)}\n`);
      runs.push(run);
    }
  }
  const bySet = sets.map((o) => runs.filter((r) => r.options === (o || "(none)")));
  const lines = [
    `# CPU per request: ${proc}, case ${key}, distributed`,
    "",
    machineHeader("process-cpu"),
    "",
    `${passes} passes, the option sets alternating; each run on a fresh cluster (embedded stores), 2 s of ` +
      `warm-up then 8 s measured; CPU is the ${proc} process's user and system time over the measured ` +
      `seconds. The gateway runs with \`${DEPLOYED.gateway.nodeOptions}\` unless measured.`,
    "",
    "| options | CPU ms per 1,000 requests (median; each pass) | req/s (median) | RSS MB (each pass) |",
    "|---|---|---|---|",
    ...bySet.map(
      (rs) =>
        `| \`${rs[0].options}\` | ${median(rs.map((r) => r.cpuMsPer1k))} (${rs.map((r) => r.cpuMsPer1k).join(", ")}) | ` +
        `${median(rs.map((r) => r.rps))} | ${rs.map((r) => r.rssMb).join(", ")} |`,
    ),
    "",
    "Load average of the machine at the end of each run: " + runs.map((r) => r.load).join(", ") + ".",
    "",
  ];
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const out = path.join(root, "bench", "results", `process-cpu-${key}-${proc}-${stamp}.md`);
  fs.writeFileSync(out, lines.join("\n"));
  process.stdout.write(lines.join("\n"));
}

main()
  .then(() => process.exit(0))
  .catch((err) => {
    process.stderr.write(`process-cpu failed: ${(err as Error).message}\n`);
    process.exit(1);
  });
