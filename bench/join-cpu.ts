/**
 * `node -r ts-node/register/transpile-only bench/join-cpu.ts [embedded|distributed] [stampedes]`: the
 * servers' CPU per join (all of this process's descendants: the embedded server, or the cluster's
 * processes with nats-server and redis-server) in case 3's stampede (2,000 users, one join each, on a fresh 100-seat round, 200 connections),
 * over `stampedes` (12) stampedes on one fresh server, the first (cold) left out. Prints one JSON line.
 *
 * Why a tool of its own: a stampede lasts about half a second, and its share of the baseline moves by
 * tens of points from round to round, so the bench's case 3 cannot tell two builds apart. The server's
 * CPU per join over many stampedes can, run alternately for each build from its own checkout (it uses
 * only the checkout's bench/systems, fixtures and load, which commit 5421488 already had) and on the
 * same Node. Linux only (reads /proc).
 */
import fs from "node:fs";
import { createFixtures } from "./fixtures";
import { load } from "./load";
import { startDistributed, startEmbedded } from "./systems";

const CONNECTIONS = 200;
const JOINERS = 2_000;
const SEATS = 100;
const IDLE_MS = 5000;

/** User plus system CPU time of a process, in ms (fields 14 and 15 of /proc/<pid>/stat, in ticks). */
function cpuMsOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** The processes started by `pid`, and theirs, and so on. */
function descendantsOf(pid: number): number[] {
  const children = fs
    .readdirSync(`/proc/${pid}/task`)
    .flatMap((tid) => fs.readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").trim().split(" "))
    .filter(Boolean)
    .map(Number);
  return children.flatMap((child) => [child, ...descendantsOf(child)]);
}

/** A process's name: its SERVICES (a cluster's Node processes), else its command (nats-server…). */
function nameOf(pid: number): string {
  const env = fs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
  const services = env.find((e) => e.startsWith("SERVICES="))?.slice("SERVICES=".length);
  return services || fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim();
}

/** The servers' CPU so far, by process name: every process below this one. */
function cpuByProcess(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const pid of descendantsOf(process.pid)) {
    const name = nameOf(pid);
    out[name] = (out[name] ?? 0) + cpuMsOf(pid);
  }
  return out;
}
const total = (cpu: Record<string, number>) => Object.values(cpu).reduce((a, b) => a + b, 0);
const cpuMs = (): number => total(cpuByProcess());
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const topology = process.argv[2] === "distributed" ? "distributed" : "embedded";
  const stampedes = Number(process.argv[3] ?? 12);
  const sizes = {
    spreadRounds: 10,
    joiners: JOINERS,
    joinSeats: SEATS,
    joinRounds: stampedes,
    listUsers: 2,
    friendsPerUser: 1,
    paymentsPerUser: 1,
  };
  const seed = (b: Parameters<typeof createFixtures>[0]) => createFixtures(b, sizes);
  const system = topology === "embedded" ? await startEmbedded(seed) : await startDistributed(seed);
  const f = system.fixtures;
  // What the servers spend doing nothing (timers, heartbeats), charged to no request.
  await sleep(2000);
  const idleFrom = cpuMs();
  await sleep(IDLE_MS);
  const idleMsPerSecond = ((cpuMs() - idleFrom) * 1000) / IDLE_MS;
  const loadFrom = cpuByProcess();
  const perJoinUs: number[] = [];
  let byProcess: Record<string, number> = {};
  const rates: number[] = [];
  try {
    for (let round = 0; round < stampedes; round++) {
      let next = 0;
      const before = cpuMs();
      let winners = 0;
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
        observe: (status) => {
          if (status === 200) winners++;
        },
      });
      // Let the tail of the stampede's work (outbox, events) land in this stampede's figure.
      await sleep(300);
      if (winners !== SEATS) throw new Error(`stampede ${round + 1}: ${winners} winners, not ${SEATS}`);
      if (round === 0) continue;
      perJoinUs.push(((cpuMs() - before) * 1000) / JOINERS);
      rates.push(result.rps);
    }
  } finally {
    byProcess = cpuByProcess();
    await system.stop();
  }
  const sorted = [...perJoinUs].sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      node: process.version,
      topology,
      medianUs: sorted[Math.floor(sorted.length / 2)],
      idleMsPerSecond: Math.round(idleMsPerSecond),
      // All stampedes with the cold one, and the pauses between them: shares, not exact per-join figures.
      usPerJoinByProcess: Object.fromEntries(
        Object.entries(byProcess).map(([k, v]) => [
          k,
          Math.round(((v - (loadFrom[k] ?? 0)) * 1000) / (JOINERS * stampedes)),
        ]),
      ),
      perJoinUs: perJoinUs.map((x) => Math.round(x)),
      joinsPerSecond: rates.map((x) => Math.round(x)),
    }),
  );
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
