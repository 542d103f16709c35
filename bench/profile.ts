/**
 * `npm run -s bench:profile -- --case <1|2|3|4a|4b|5|8|9> --topology <embedded|distributed> [--seconds N]
 * [--users N --rounds N --mix round=80,join=5,…] [--node-options …]`: CPU profiles of one case under
 * its load (Node options of the servers as in bench/node-options.ts).
 * - embedded: the one server process runs with `node --cpu-prof`;
 * - distributed: the gateway and the service process(es) the case mainly exercises (PROFILED) do.
 * After the load they are stopped with SIGINT, so that V8 writes each profile on exit; each is
 * summarised (self time by area and by function, inclusive time of the project's functions) over the
 * samples taken while the load ran (start-up and seeding left out), into one Markdown report,
 * bench/results/profile-<case>-<topology>-<time>.md, also printed. The .cpuprofile files stay in a
 * temporary folder (printed), to be opened in Chrome DevTools.
 */
import fs from "node:fs";
import path from "node:path";
import { monotonicMicros, summariseProfile, type Window } from "./cpuprofile";
import { createFixtures, type FixtureSizes } from "./fixtures";
import { planFor, scenarioFactories } from "./http";
import { build, flag, machineHeader, onProductionNode, root, tmpDir, type Row } from "./lib";
import {
  CONNECTIONS,
  embeddedStartTimeoutMs,
  MIX,
  mixedScenario,
  parseMix,
  seedMixed,
  type MixedCase,
  type MixedSizes,
} from "./mixed";
import type { LoadResult } from "./load";
import type { Scenario } from "./scenarios/scenario";
import { startDistributed, startEmbedded, type Seeder, type System, type Topology } from "./systems";
import { ALL_SERVICES } from "../test/support/cluster";
import { describeNodeOptions, distributedNodeArgs, nodeArgsOf, parseNodeOptions } from "./node-options";

/** The service processes each case mainly exercises (besides the gateway), distributed. */
export const PROFILED: Record<string, string[]> = {
  "1": ["rounds"],
  "2": ["rounds"],
  "3": ["rounds"],
  "4a": ["users"],
  "4b": ["users"],
  "5": ["auth"],
  "8": ALL_SERVICES,
  "9": ALL_SERVICES,
};

/** The mixed workload's cases (bench/mixed.ts). */
const isMixed = (key: string): key is MixedCase => key === "8" || key === "9";

const CASES = Object.keys(PROFILED);

const log = (line: string) => process.stderr.write(`${line}\n`);

const table = (rows: Row[]) => {
  const cols = Object.keys(rows[0] ?? {});
  return [
    `| ${cols.join(" | ")} |`,
    `|${cols.map(() => "---").join("|")}|`,
    ...rows.map((r) => `| ${cols.map((c) => String(r[c])).join(" | ")} |`),
  ].join("\n");
};

/** Fixtures of a full run, without what the case does not read (e.g. case 1 needs no 10,000 rounds). */
function sizesFor(key: string): FixtureSizes {
  const full = planFor(false, []).sizes;
  return {
    ...full,
    spreadRounds: key === "2" ? full.spreadRounds : 0,
    joiners: key === "3" || key === "5" ? full.joiners : key.startsWith("4") ? full.listUsers : 10,
    joinRounds: 1,
    listUsers: key.startsWith("4") ? full.listUsers : 0,
    paymentsPerUser: key === "4b" ? full.paymentsPerUser : 0,
    friendsPerUser: key === "4a" ? full.friendsPerUser : 0,
  };
}

async function main(): Promise<void> {
  const key = flag("case") ?? "1";
  const topology = (flag("topology") ?? "embedded") as Topology;
  const seconds = Number(flag("seconds") ?? 15);
  if (!CASES.includes(key)) throw new Error(`--case must be one of ${CASES.join(", ")}, not ${key}`);
  if (topology !== "embedded" && topology !== "distributed")
    throw new Error(`--topology must be embedded or distributed, not ${topology}`);
  if (!(seconds > 0)) throw new Error("--seconds must be a positive number");
  build();

  const dir = tmpDir("bench-profile-");
  // A sample every 250 µs (the default is 1 ms): a request costs about a millisecond here.
  const profArgs = (name: string) => [
    "--cpu-prof",
    `--cpu-prof-dir=${dir}`,
    `--cpu-prof-name=${name}.cpuprofile`,
    "--cpu-prof-interval=250",
  ];
  const processes = topology === "embedded" ? ["embedded"] : ["gateway", ...PROFILED[key]];
  const mixedSizes: MixedSizes = {
    users: Number(flag("users") ?? 100_000),
    rounds: Number(flag("rounds") ?? 10_000),
  };

  const nodeOptions = parseNodeOptions(flag("node-options"));
  const start = async <F>(seed: Seeder<F>): Promise<System<F>> =>
    topology === "embedded"
      ? startEmbedded(seed, {
          nodeArgs: [...nodeArgsOf(nodeOptions, "embedded"), ...profArgs("embedded")],
          stopSignal: "SIGINT",
          ...(isMixed(key) && { startTimeoutMs: embeddedStartTimeoutMs(mixedSizes) }),
        })
      : startDistributed(seed, {
          nodeArgs: {
            ...distributedNodeArgs(nodeOptions),
            ...Object.fromEntries(processes.map((p) => [p, [...nodeArgsOf(nodeOptions, p), ...profArgs(p)]])),
          },
          stopSignal: "SIGINT",
        });

  const t0 = Date.now();
  log(`== profile: case ${key}, ${topology} (${processes.join(", ")}): starting, creating the data`);
  let scenario: Scenario;
  let system: System<unknown>;
  if (isMixed(key)) {
    const s = await start((b) => seedMixed(b, mixedSizes, log));
    system = s;
    const mix = flag("mix");
    scenario = mixedScenario(s.fixtures, {
      connections: CONNECTIONS,
      mix: mix === undefined ? MIX : parseMix(mix),
      key,
    });
  } else {
    const sizes = sizesFor(key);
    const s = await start((b) => createFixtures(b, sizes));
    system = s;
    const factory = scenarioFactories(sizes).find(([k]) => k === key)?.[1];
    if (!factory) throw new Error(`no scenario ${key}`);
    scenario = factory(s.fixtures);
  }
  log(`== ready after ${((Date.now() - t0) / 1000).toFixed(1)} s; load for ${seconds} s`);

  let result: LoadResult;
  let window: Window;
  try {
    await scenario.record(system.baseUrl);
    const from = monotonicMicros();
    result = await scenario.measure({ url: system.baseUrl, side: "system", round: 0, seconds });
    window = { from, to: monotonicMicros() };
  } finally {
    await system.stop();
  }

  const files = processes.map((p) => path.join(dir, `${p}.cpuprofile`));
  const missing = files.filter((f) => !fs.existsSync(f));
  if (missing.length > 0) throw new Error(`no profile was written: ${missing.join(", ")}`);
  const load =
    `${scenario.connections} connections, ` +
    (key === "3" ? "one join per user" : `${seconds} s`) +
    `: ${result.requests.toLocaleString("en")} requests, ${result.rps.toFixed(0)} req/s, ` +
    `p50 ${result.p50} ms, p99 ${result.p99} ms, ${result.errors} errors.`;
  const lines = [
    `# CPU profile: case ${key} (${scenario.title}), ${topology}`,
    "",
    machineHeader("profile"),
    "",
    describeNodeOptions(nodeOptions),
    "",
    `Load: ${load} Profiled: ${processes.join(", ")} (node --cpu-prof, a sample every 250 µs). Only the ` +
      "samples taken while the load ran are counted (not start-up, not seeding); percentages are of " +
      "each process's busy time in that window.",
    "",
  ];
  for (const [i, name] of processes.entries()) {
    const summary = summariseProfile(files[i], root, 25, window);
    lines.push(
      `## ${name}`,
      "",
      `Profile: ${files[i]}. ${summary.samples} samples over ${summary.seconds.toFixed(1)} s, ` +
        `${(summary.busy * 100).toFixed(0)}% busy.`,
      "",
      "### Self time by area",
      "",
      table(summary.areas),
      "",
      "### Self time by function",
      "",
      table(summary.functions),
      "",
      "### Inclusive time of the project's functions",
      "",
      table(summary.project),
      "",
    );
  }
  const md = lines.join("\n");
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const out = path.join(root, "bench", "results", `profile-${key}-${topology}-${stamp}.md`);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, md);
  process.stdout.write(md);
  log(`\nreport: ${path.relative(process.cwd(), out)}`);
  for (const f of files) log(`profile: ${f}`);
}

onProductionNode();
main()
  .then(() => process.exit(0))
  .catch((err) => {
    process.stderr.write(`profile failed: ${(err as Error).message}\n`);
    process.exit(1);
  });
