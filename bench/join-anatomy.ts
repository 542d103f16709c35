/**
 * `node -r ts-node/register/transpile-only bench/join-anatomy.ts [embedded|distributed] [rounds]`: where
 * the slowest answers of case 3 (the join stampede) wait. Runs the stampede `rounds` times (8) on a fresh
 * system and reports, per round: joins/s and p99 as the bench measures them, the winners' latency, how
 * many of the slowest 1% were the first request of their connection, and the kernel's accept queue on
 * the gateway's port (`ss`, sampled every few milliseconds: connections the server has not accepted
 * yet). Written to bench/results/join-anatomy-<topology>-<time>.md and printed.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { createFixtures } from "./fixtures";
import { build, machineHeader } from "./lib";
import { load } from "./load";
import { startDistributed, startEmbedded } from "./systems";

const CONNECTIONS = 200;
const JOINERS = 2_000;
const SEATS = 100;

/** The accept queues of every listening socket on `port`, summed, sampled until stopped. */
function sampleAcceptQueue(port: string): { samples: { at: number; queued: number }[]; stop(): void } {
  const samples: { at: number; queued: number }[] = [];
  let on = true;
  const sample = () => {
    if (!on) return;
    const at = Date.now();
    execFile("ss", ["-ltnH", `sport = :${port}`], (_err, out) => {
      const queued = String(out ?? "")
        .trim()
        .split("\n")
        .reduce((sum, line) => sum + (Number(line.trim().split(/\s+/)[1]) || 0), 0);
      samples.push({ at, queued });
      setTimeout(sample, 2);
    });
  };
  sample();
  return { samples, stop: () => (on = false) };
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;

async function main(): Promise<void> {
  const topology = process.argv[2] === "distributed" ? "distributed" : "embedded";
  const rounds = Number(process.argv[3] ?? 8);
  build();
  const sizes = {
    spreadRounds: 10,
    joiners: JOINERS,
    joinSeats: SEATS,
    joinRounds: rounds,
    listUsers: 2,
    friendsPerUser: 1,
    paymentsPerUser: 1,
  };
  const seed = (b: Parameters<typeof createFixtures>[0]) => createFixtures(b, sizes);
  const system = topology === "embedded" ? await startEmbedded(seed) : await startDistributed(seed);
  const f = system.fixtures;
  const queue = sampleAcceptQueue(new URL(system.baseUrl).port);
  const rows: string[] = [];
  try {
    for (let round = 0; round < rounds; round++) {
      const answers: { status: number; ms: number; first: boolean }[] = [];
      const seen = new Set<unknown>();
      let next = 0;
      const from = Date.now();
      const result = await load({
        url: system.baseUrl,
        connections: CONNECTIONS,
        amount: JOINERS,
        expected: [200, 409],
        requests: [
          {
            path: `/rounds/${f.joinRounds[round]}/join`,
            setupRequest: (req) => ({
              ...req,
              method: "POST",
              headers: {
                authorization: `Bearer ${f.joiners[next++ % f.joiners.length].access}`,
                "content-type": "application/json",
              },
              body: JSON.stringify({ attributes: [] }),
            }),
          },
        ],
        observe: (status, ms, connection) => {
          answers.push({ status, ms, first: !seen.has(connection) });
          seen.add(connection);
        },
      });
      const slowest = answers.filter((a) => a.ms >= result.p99);
      const winners = answers
        .filter((a) => a.status === 200)
        .map((a) => a.ms)
        .sort((a, b) => a - b);
      const during = queue.samples.filter((s) => s.at >= from);
      const waiting = during.filter((s) => s.queued > 0).map((s) => s.at - from);
      rows.push(
        `| ${round + 1} | ${result.rps.toFixed(0)} | ${result.p99} | ${quantile(winners, 0.5).toFixed(0)} / ${(winners[winners.length - 1] ?? 0).toFixed(0)} | ` +
          `${slowest.length}: ${slowest.filter((a) => a.first).length} first on their connection, ${slowest.filter((a) => a.status === 200).length} winners | ` +
          `${Math.max(0, ...during.map((s) => s.queued))} | ${waiting.length ? Math.max(...waiting) : 0} |`,
      );
    }
  } finally {
    queue.stop();
    await system.stop();
  }
  const report = [
    `# Case 3 anatomy (${topology}): where the slowest joins wait`,
    "",
    machineHeader("join anatomy"),
    "",
    `${rounds} stampedes of ${JOINERS.toLocaleString("en")} joins (one per user) on fresh ${SEATS}-seat rounds, ${CONNECTIONS} new connections each; the first is cold. Accept queue: connections the kernel completed and the server had not accepted yet, summed over the port's listening sockets (\`ss\`, every few ms).`,
    "",
    "| stampede | joins/s | p99 ms | winners p50 / max ms | slowest 1% | accept queue peak | queue non-empty until ms |",
    "|---|---|---|---|---|---|---|",
    ...rows,
    "",
  ].join("\n");
  const file = path.join(
    __dirname,
    "results",
    `join-anatomy-${topology}-${new Date().toISOString().replace(/[:.]/g, "-")}.md`,
  );
  fs.writeFileSync(file, report);
  console.log(report);
  console.log(`written to ${path.relative(process.cwd(), file)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
