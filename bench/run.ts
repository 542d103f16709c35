/**
 * `npm run bench [-- --quick] [-- --topology embedded|distributed] [-- --only 1,3,6,8,9]
 * [-- --users N --rounds N --connections N --mix round=80,join=5,…]`: builds, then
 * measures every case against real server processes and prints one table (also written as JSON and
 * Markdown under bench/results/, except for quick runs). Cases 1–5 run in both topologies, alternating
 * with a bare node:http baseline that answers the same bytes, one baseline run more after the last
 * round; 6 (upload) and 7 (multicast, in each topology asked for) are their own benches; 8 and 9 (a
 * mixed workload over --users and --rounds, on --connections, with the routes' shares of --mix; 8 with
 * callers in sessions, 9 with a new caller for every request, bench/mixed.ts) run in each topology asked
 * for, with moleculer-web alone as long as the system's run before and after it. With MONGO_URI in the
 * environment the systems store in MongoDB (bench/systems.ts). It reports; it asserts no speed (targets
 * and goals, bench/goals.ts, are printed beside the numbers), only that every case ran, without
 * unexpected errors, and that join capacity stayed exact. `--soak [--minutes N]`: case 9's mix for N
 * minutes (10) against the embedded system, memory and store size every minute (bench/soak.ts).
 */
import fs from "node:fs";
import { startBaseline } from "./baseline";
import { ratioChart, type ChartBar } from "./chart";
import { HTTP_KEYS, planFor, runHttpBench, type TopologyOutcome } from "./http";
import { build, flag, machineHeader, onProductionNode, writeResults, type Row, type Section } from "./lib";
import { runMulticastBench } from "./multicast";
import { baselineShare, type ScenarioOutcome } from "./ab";
import {
  MIXED_CASES,
  mixedOn,
  mixedPlanFor,
  parseMix,
  mixedRouteRows,
  runMixedBench,
  runMixedEmbedded,
  type MixedOutcome,
} from "./mixed";
import {
  DEFAULT_SIZES,
  DEFAULT_USER_SIZES,
  mixedScalingRows,
  runMixedScaling,
  runScaling,
  scalingRows,
  type MixedScalingOutcome,
  type ScalingOutcome,
} from "./scaling";
import { httpRows, multicastRows, runRows, uploadRows } from "./report";
import { GOALS_TITLE, goalRows } from "./goals";
import { storeHeader, type System, type Topology } from "./systems";
import { runUploadBench } from "./upload";
import { runSoak } from "./soak";
import { describeNodeOptions, parseNodeOptions } from "./node-options";
import { binary } from "../test/support/brokers";
import { OUTCOME_FILE_FLAG, case3OnMachineNode, otherMachineNode } from "./machine-node";

const log = (line: string) => process.stderr.write(`${line}\n`);

function topologies(): Topology[] {
  const asked = flag("topology") ?? "both";
  const wanted: Topology[] = asked === "both" ? ["embedded", "distributed"] : [asked as Topology];
  if (wanted.some((t) => t !== "embedded" && t !== "distributed"))
    throw new Error(`--topology must be embedded, distributed or both, not ${asked}`);
  const missing = ["nats-server", "redis-server"].filter((b) => !binary(b));
  if (wanted.includes("distributed") && missing.length > 0) {
    if (process.env.CI === "true")
      throw new Error(`${missing.join(", ")} not installed (.ci/run installs them)`);
    log(`skipping the distributed topology: ${missing.join(", ")} not installed`);
    return wanted.filter((t) => t !== "distributed");
  }
  return wanted;
}

/** `--scaling`: cases 1–3 at several numbers of rounds (bench/scaling.ts), its own report. */
async function scaling(quick: boolean): Promise<void> {
  const sizes = (flag("sizes") ?? (quick ? "100,1000" : DEFAULT_SIZES.join(","))).split(",").map(Number);
  if (sizes.some((n) => !(n > 0))) throw new Error("--sizes must be positive numbers, e.g. 1000,10000");
  const users = (flag("users") ?? (quick ? "300,1000" : DEFAULT_USER_SIZES.join(","))).split(",").map(Number);
  if (users.some((n) => !(n > 0))) throw new Error("--users must be positive numbers, e.g. 10000,100000");
  const seconds = Number(flag("seconds") ?? (quick ? 1 : 5));
  build();
  const baseline = await startBaseline();
  let outcomes: ScalingOutcome[];
  let mixed: MixedScalingOutcome[];
  try {
    const wanted = topologies();
    outcomes = await runScaling(wanted, sizes, seconds, baseline, log);
    mixed = await runMixedScaling(wanted, users, seconds, baseline, log);
  } finally {
    await baseline.stop();
  }
  const header = [
    machineHeader(quick ? "quick" : "full"),
    `Cases 1 (one hot round), 2 (reads spread over every round) and 3 (joins: 2,000 users, 100 seats) ` +
      `on a fresh system holding ${sizes.map((n) => n.toLocaleString("en")).join(", ")} rounds; one ` +
      `alternating round of ${seconds} s (baseline, then system) per case.`,
    `Case 9 (the mixed workload, every request a new caller) on a fresh system holding ${users.map((n) => n.toLocaleString("en")).join(", ")} ` +
      `users and a tenth as many rounds; one round of ${seconds} s.`,
  ].join("\n\n");
  const sections: Section[] = [
    { title: "By number of rounds", rows: scalingRows(outcomes) },
    { title: "Case 9 by number of users", rows: mixedScalingRows(mixed) },
    { title: "Every run", rows: runRows(outcomes.map((o) => o.result)) },
  ];
  process.stdout.write(`${writeResults("scaling", header, sections, !quick)}\n`);
  const failures = outcomes.flatMap(({ rounds, result }) =>
    result.outcomes
      .filter((o) => o.system.errors > 0 || o.system.requests === 0)
      .map((o) => `${result.topology} case ${o.scenario.key} at ${rounds} rounds: ${o.system.errors} errors`),
  );
  failures.push(
    ...mixed
      .filter(({ outcome: o }) => !o || o.system.errors > 0 || o.system.requests === 0)
      .map(({ users: n, topology, outcome: o, failure }) =>
        o
          ? `${topology} case 9 at ${n} users: ${o.system.errors} errors`
          : `${topology} case 9 at ${n} users: ${failure}`,
      ),
  );
  if (failures.length > 0) throw new Error(failures.join("\n"));
}

async function main(): Promise<void> {
  const quick = process.argv.includes("--quick");
  if (process.argv.includes("--scaling")) return scaling(quick);
  if (process.argv.includes("--soak")) {
    build();
    return runSoak(quick, log);
  }
  const only = (flag("only") ?? "").split(",").filter(Boolean);
  const wants = (key: string) => only.length === 0 || only.includes(key);
  const plan = planFor(
    quick,
    only.filter((k) => HTTP_KEYS.includes(k)),
  );
  plan.nodeOptions = parseNodeOptions(flag("node-options"));
  const runHttp = HTTP_KEYS.some(wants);
  const sizeFlag = (name: string) => (flag(name) === undefined ? undefined : Number(flag(name)));
  const mix = flag("mix");
  const mixedPlan = mixedPlanFor(
    quick,
    { users: sizeFlag("users"), rounds: sizeFlag("rounds") },
    sizeFlag("connections"),
    mix === undefined ? undefined : parseMix(mix),
    MIXED_CASES.filter(wants),
  );
  mixedPlan.nodeOptions = plan.nodeOptions;
  const runMixed = mixedPlan.cases.length > 0;
  const wanted = runHttp || runMixed ? topologies() : [];
  build();
  const machine = otherMachineNode();
  const alsoOnMachineNode = machine && wants("3") && wanted.includes("embedded") ? machine : null;
  const header = [
    machineHeader(quick ? "quick" : "full"),
    `Cases 1–5: ${plan.rounds} alternating round${plan.rounds === 1 ? "" : "s"} (baseline, system, baseline, ` +
      `system…, baseline) of ${plan.seconds} s ` +
      "each (case 3: one join per user), medians of the rounds; the baseline is a bare node:http server " +
      "in its own process answering the bytes recorded from the system for that case. A share is the " +
      "system's req/s against the mean of the baseline runs just before and after it (the median of the " +
      "rounds), in brackets its lowest and highest against either run alone.",
    `Cases 8 and 9: a mixed workload over ${mixedPlan.sizes.users.toLocaleString("en")} users and ` +
      `${mixedPlan.sizes.rounds.toLocaleString("en")} rounds, ${mixedPlan.seconds} s, one run each on one ` +
      "system, 8 (callers in sessions) first; moleculer-web alone runs as long, before and after the " +
      "system's run, each once the system is quiet; the bare baseline (at most 10 s, before and after) " +
      "answers the recorded round read to the same mix of requests.",
    `Cases 1–5, 8 and 9: ${describeNodeOptions(plan.nodeOptions ?? {})} Cases 6 and 7 run each ` +
      "process with its options as deployed.",
    storeHeader(),
    ...(alsoOnMachineNode
      ? [
          `Case 3 embedded also runs on the machine's Node (${alsoOnMachineNode.version}), where its p99 ` +
            "target holds as well: cases 1–3 on a server of their own, case 3 reported.",
        ]
      : []),
  ].join("\n\n");

  const http: TopologyOutcome[] = [];
  const mixed = new Map<Topology, MixedOutcome[]>();
  if (runHttp || runMixed) {
    const baseline = await startBaseline();
    try {
      // Distributed, cases 8 and 9 run on the cluster of cases 1–5 when that runs (no second start-up).
      // Embedded, their data is made before the server starts, so they always have a server of their own.
      const onCluster = async (system: System): Promise<ScenarioOutcome[]> => {
        if (!runMixed || !system.client) return [];
        const r = await mixedOn(system.baseUrl, system.client, mixedPlan, baseline, log, system.watched);
        mixed.set("distributed", r);
        return r.map((x) => x.outcome);
      };
      for (const topology of wanted) {
        const outcome: TopologyOutcome = runHttp
          ? await runHttpBench(topology, plan, baseline, log, onCluster)
          : { topology, outcomes: [] };
        if (runMixed && !mixed.has(topology)) {
          const r =
            topology === "embedded"
              ? await runMixedEmbedded(mixedPlan, baseline, log)
              : await runMixedBench(mixedPlan, baseline, log);
          mixed.set(topology, r);
          outcome.outcomes.push(...r.map((x) => x.outcome));
        }
        http.push(outcome);
      }
    } finally {
      await baseline.stop();
    }
  }
  const outcomeFile = flag(OUTCOME_FILE_FLAG);
  if (outcomeFile !== undefined) {
    fs.writeFileSync(outcomeFile, JSON.stringify(http));
    return;
  }
  // Cases 1–5, 8 and 9 as reported: this Node's, then case 3 on the machine's Node.
  const reported = alsoOnMachineNode ? [...http, case3OnMachineNode(alsoOnMachineNode, quick, log)] : http;
  // Quick runs (CI) only prove the bench still works; their numbers are not kept.
  const upload: Row[] = wants("6") ? await runUploadBench(quick) : [];
  const multicast: Row[] = wants("7") ? await runMulticastBench(quick, topologies()) : [];

  const sections: Section[] = [
    {
      title: "All cases",
      rows: [...httpRows(reported), ...uploadRows(upload), ...multicastRows(multicast)],
    },
  ];
  const goals = goalRows(http);
  if (goals.length > 0) sections.push({ title: GOALS_TITLE, rows: goals });
  if (mixed.size > 0)
    sections.push({
      title: "8 and 9. Mixed workload by route",
      rows: [...mixed].flatMap(([topology, runs]) =>
        runs.flatMap((r) => mixedRouteRows(topology, r.outcome.scenario.key, [r.routes])),
      ),
    });
  if (http.length > 0)
    sections.push({
      title: "Every run of cases 1–5, 8 and 9",
      rows: runRows(reported),
    });
  if (upload.length > 0) sections.push({ title: "6. Upload", rows: upload });
  if (multicast.length > 0) sections.push({ title: "7. Multicast", rows: multicast });
  const bars: ChartBar[] = http.flatMap(({ topology, outcomes }) =>
    outcomes.map((o) => ({ key: o.scenario.key, topology, ratio: baselineShare(o).value })),
  );
  const extras: Record<string, string> = {};
  if (bars.length > 0) extras.svg = ratioChart(bars, "Each case's req/s as a share of the baseline");
  process.stdout.write(`${writeResults("bench", header, sections, !quick, extras)}\n`);

  const failures: string[] = [];
  for (const { topology, outcomes } of reported) {
    for (const o of outcomes) {
      const what = `${topology} case ${o.scenario.key}`;
      if (o.system.requests === 0 || o.baseline.requests === 0) failures.push(`${what} sent no request`);
      if (o.system.errors > 0) failures.push(`${what}: ${o.system.errors} unexpected errors`);
      if (o.baseline.errors > 0) failures.push(`${what}: ${o.baseline.errors} errors against the baseline`);
      const framework = (o.framework?.before.errors ?? 0) + (o.framework?.after.errors ?? 0);
      if (framework > 0) failures.push(`${what}: ${framework} errors against moleculer-web alone`);
    }
  }
  if (upload.some((r) => r.status !== 200)) failures.push("An upload did not succeed");
  if (multicast.some((r) => r.status !== "done" || r.sent !== r.devices))
    failures.push("The multicast did not complete");
  if (failures.length > 0) throw new Error(failures.join("\n"));
}

onProductionNode();
main()
  // Nothing is left to wait for; a lingering keep-alive socket or timer must not hold the exit.
  .then(() => process.exit(0))
  .catch((err) => {
    process.stderr.write(`bench failed: ${(err as Error).message}\n`);
    process.exit(1);
  });
