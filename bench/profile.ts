/**
 * `npm run -s bench:profile [-- --seconds 15]`: CPU profile of case 1 (GET /rounds/{id}, hot) on the
 * embedded server. The server runs with `node --cpu-prof`, takes the load, and is stopped with SIGINT
 * so that V8 writes the profile on exit; the summary (self time by function and by area, inclusive time
 * of the project's functions) is printed as Markdown. The profile file stays in a temporary folder, to be
 * opened in Chrome DevTools.
 */
import fs from "node:fs";
import path from "node:path";
import { summariseProfile } from "./cpuprofile";
import { build, machineHeader, root, tmpDir, type Row } from "./lib";
import { roundsHot } from "./scenarios/rounds-hot";
import { startEmbedded } from "./systems";

const table = (rows: Row[]) => {
  const cols = Object.keys(rows[0] ?? {});
  return [
    `| ${cols.join(" | ")} |`,
    `|${cols.map(() => "---").join("|")}|`,
    ...rows.map((r) => `| ${cols.map((c) => String(r[c])).join(" | ")} |`),
  ].join("\n");
};

async function main(): Promise<void> {
  const i = process.argv.indexOf("--seconds");
  const seconds = i > 0 ? Number(process.argv[i + 1]) : 15;
  build();
  const dir = tmpDir("bench-profile-");
  const system = await startEmbedded(
    {
      spreadRounds: 0,
      joiners: 10,
      joinSeats: 1,
      joinRounds: 0,
      listUsers: 0,
      friendsPerUser: 0,
      paymentsPerUser: 0,
    },
    // A sample every 250 µs (the default is 1 ms): a request costs about a millisecond here.
    { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${dir}`, "--cpu-prof-interval=250"], stopSignal: "SIGINT" },
  );
  let result;
  try {
    const scenario = roundsHot(system.fixtures);
    await scenario.record(system.baseUrl);
    result = await scenario.measure({ url: system.baseUrl, side: "system", round: 0, seconds });
  } finally {
    await system.stop();
  }
  const file = fs.readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
  if (!file) throw new Error(`no profile was written to ${dir}`);
  const summary = summariseProfile(path.join(dir, file), root);
  const lines = [
    `# CPU profile: case 1 (GET /rounds/{id} hot), embedded`,
    "",
    machineHeader("profile"),
    "",
    `Load: 64 connections for ${seconds} s: ${result.rps.toFixed(0)} req/s, p50 ${result.p50} ms, ` +
      `p99 ${result.p99} ms, ${result.errors} errors. The profile covers the server's whole life ` +
      `(start-up and ${summary.samples} samples over ${summary.seconds.toFixed(1)} s, ` +
      `${(summary.busy * 100).toFixed(0)}% busy); percentages are of the busy time.`,
    "",
    `Profile: ${path.join(dir, file)}`,
    "",
    "## Self time by area",
    "",
    table(summary.areas),
    "",
    "## Self time by function",
    "",
    table(summary.functions),
    "",
    "## Inclusive time of the project's functions",
    "",
    table(summary.project),
    "",
  ];
  process.stdout.write(lines.join("\n"));
}

main()
  .then(() => process.exit(0))
  .catch((err) => {
    process.stderr.write(`profile failed: ${(err as Error).message}\n`);
    process.exit(1);
  });
