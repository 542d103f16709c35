/**
 * `npm run bench -- --soak [--minutes N] [--users N --rounds N]`: case 9, the mixed workload
 * with a new caller for every request (bench/mixed.ts; the most callers to remember), for N minutes (10 by default; 1 with --quick) against the embedded system on its
 * default settings, in one-minute runs. Before the first run, after each one and at the end it reads the
 * server's resident memory, its heap after a full garbage collection (through the inspector the server
 * is started with), and the store on disk (the collections' files, the media folder); at the start and
 * at the end, each collection's documents, counted from its file. It asserts no speed, and nothing
 * about growth: it reports (bench/results/soak-*.md), and what grows is read from the report
 * (docs/operations.md, "What a day adds").
 */
import fs from "node:fs";
import path from "node:path";
import { flag, freePort, machineHeader, memoryOf, writeResults, type Row } from "./lib";
import {
  mixedPlanFor,
  mixedScenario,
  seedMixed,
  MIX,
  type MixedFixtures,
  type MixedResult,
  type Route,
} from "./mixed";
import { startEmbedded } from "./systems";
import { heapAfterGc } from "../test/support/heap-after-gc";

const MB = 2 ** 20;
const mb = (bytes: number) => (bytes / MB).toFixed(1);

/** Bytes of every regular file under `dir`, recursively (0 when it does not exist). */
function bytesUnder(dir: string): number {
  if (!fs.existsSync(dir)) return 0;
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += bytesUnder(full);
    else if (entry.isFile()) total += fs.statSync(full).size;
  }
  return total;
}

/** Each collection's file size (bytes), by collection. */
function fileSizes(dbDir: string): Record<string, number> {
  const sizes: Record<string, number> = {};
  for (const f of fs.readdirSync(dbDir).filter((n) => n.endsWith(".db")))
    sizes[f.slice(0, -3)] = fs.statSync(path.join(dbDir, f)).size;
  return sizes;
}

/**
 * The documents of one NeDB file, read as NeDB's loader reads it (the last line of an `_id` wins), and
 * the bytes of their lines with newlines: about what a compaction would leave (it also writes the
 * index definitions, a line each).
 */
export function liveIn(file: string): { documents: number; bytes: number } {
  const live = new Map<string, number>();
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    if (line === "") continue;
    let doc: { _id?: unknown; $$deleted?: boolean };
    try {
      doc = JSON.parse(line) as typeof doc;
    } catch {
      continue;
    }
    if (doc._id === undefined) continue;
    const id = JSON.stringify(doc._id);
    if (doc.$$deleted) live.delete(id);
    else live.set(id, Buffer.byteLength(line) + 1);
  }
  let bytes = 0;
  for (const b of live.values()) bytes += b;
  return { documents: live.size, bytes };
}

/** Each collection's documents and their live bytes (liveIn), by collection. */
function liveByCollection(dbDir: string): Record<string, { documents: number; bytes: number }> {
  const found: Record<string, { documents: number; bytes: number }> = {};
  for (const f of fs.readdirSync(dbDir).filter((n) => n.endsWith(".db")))
    found[f.slice(0, -3)] = liveIn(path.join(dbDir, f));
  return found;
}

interface Sample {
  minute: number;
  requests: number;
  rss: number;
  heap: number | null;
  store: number;
  media: number;
  files: Record<string, number>;
}

/** The collections worth a column: the largest files at the end. */
const biggest = (files: Record<string, number>, n: number) =>
  Object.entries(files)
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name]) => name);

export async function runSoak(quick: boolean, log: (line: string) => void): Promise<void> {
  // --quick, as elsewhere in the bench, is a check that it runs: a small data set, for one minute.
  const minutes = Number(flag("minutes") ?? (quick ? 1 : 10));
  if (!(minutes > 0)) throw new Error("--minutes must be a positive number");
  const sizeFlag = (name: string) => (flag(name) === undefined ? undefined : Number(flag(name)));
  const plan = mixedPlanFor(quick, { users: sizeFlag("users"), rounds: sizeFlag("rounds") });
  const inspectPort = await freePort();
  log(
    `soak: creating ${plan.sizes.users.toLocaleString("en")} users and ` +
      `${plan.sizes.rounds.toLocaleString("en")} rounds`,
  );
  const system = await startEmbedded((broker) => seedMixed(broker, plan.sizes, log), {
    nodeArgs: [`--inspect=127.0.0.1:${inspectPort}`],
    // Loading 100,000 users and their tokens on a shared, busy machine can take longer than a minute.
    startTimeoutMs: 300_000,
  });
  const dbDir = path.join(system.dataDir, "db");
  const mediaDir = path.join(system.dataDir, "media");
  const pid = system.process.pid as number;
  const samples: Sample[] = [];
  const sample = async (minute: number, requests: number) => {
    const s: Sample = {
      minute,
      requests,
      rss: memoryOf(pid).rss,
      heap: await heapAfterGc(inspectPort).catch(() => null),
      store: bytesUnder(dbDir),
      media: bytesUnder(mediaDir),
      files: fileSizes(dbDir),
    };
    samples.push(s);
    log(
      `soak: minute ${minute}: ${requests.toLocaleString("en")} requests, RSS ${mb(s.rss)} MB, heap after GC ` +
        `${s.heap === null ? "n/a" : mb(s.heap)} MB, store ${mb(s.store)} MB`,
    );
  };
  const fixtures: MixedFixtures = system.fixtures;
  const atStart = liveByCollection(dbDir);
  const byRoute: Record<string, number> = {};
  const statuses: Record<string, number> = {};
  let errors = 0;
  let atEnd: Record<string, { documents: number; bytes: number }> = {};
  let seats: string;
  let filesAfterStop: Record<string, number> = {};
  try {
    await sample(0, 0);
    const scenario = mixedScenario(fixtures, { key: "9" });
    for (let minute = 1; minute <= minutes; minute++) {
      const run = { url: system.baseUrl, side: "system" as const, round: minute, seconds: 60 };
      const result = (await scenario.measure(run)) as MixedResult;
      errors += result.errors;
      for (const r of result.routes) byRoute[r.route] = (byRoute[r.route] ?? 0) + r.requests;
      for (const [code, n] of Object.entries(result.statuses)) statuses[code] = (statuses[code] ?? 0) + n;
      await sample(minute, result.requests);
    }
    // Throws when a round holds more members than seats, or other than its seeded and seated callers.
    seats = await scenario.verify(system.baseUrl);
  } finally {
    // Stopped by SIGTERM: the store writes out every file, so what is counted is what it holds.
    await system.stopServer();
    if (fs.existsSync(dbDir)) {
      atEnd = liveByCollection(dbDir);
      filesAfterStop = fileSizes(dbDir);
    }
    await system.stop();
  }

  const columns = biggest(samples[samples.length - 1].files, 6);
  const overTime: Row[] = samples.map((s) => ({
    minute: s.minute,
    requests: s.requests,
    "RSS MB": mb(s.rss),
    "heap after GC MB": s.heap === null ? "n/a" : mb(s.heap),
    "store MB": mb(s.store),
    "media MB": mb(s.media),
    ...Object.fromEntries(columns.map((c) => [`${c} MB`, mb(s.files[c] ?? 0)])),
  }));
  const total = Object.values(byRoute).reduce((a, b) => a + b, 0);
  const collections: Row[] = Object.keys({ ...atStart, ...atEnd })
    .sort()
    .map((name) => {
      const start = atStart[name]?.documents ?? 0;
      const end = atEnd[name]?.documents ?? 0;
      return {
        collection: name,
        "documents at start": start,
        "documents at end": end,
        added: end - start,
        "added per 1,000 requests": total > 0 ? (((end - start) / total) * 1000).toFixed(2) : "–",
        "file MB at start": mb(samples[0].files[name] ?? 0),
        "file MB at end (before stop)": mb(samples[samples.length - 1].files[name] ?? 0),
        "file MB after stop": mb(filesAfterStop[name] ?? 0),
        "live MB after stop": mb(atEnd[name]?.bytes ?? 0),
      };
    });
  const routes: Row[] = (Object.keys(MIX) as Route[]).map((route) => ({
    route,
    requests: byRoute[route] ?? 0,
    share: total > 0 ? `${(((byRoute[route] ?? 0) / total) * 100).toFixed(1)}%` : "–",
  }));
  const header = [
    machineHeader(quick ? "quick" : "full"),
    `Soak: case 9 (the mixed workload, every request a new caller) for ${minutes} one-minute runs, 256 connections, against the ` +
      `embedded system (one process, default settings) over ${plan.sizes.users.toLocaleString("en")} users ` +
      `and ${plan.sizes.rounds.toLocaleString("en")} rounds. ${total.toLocaleString("en")} requests in all, ` +
      `${errors} unexpected answers; statuses ${Object.entries(statuses)
        .map(([c, n]) => `${c}×${n}`)
        .join(" ")}; ${seats}.`,
    "RSS from /proc; the heap after a full collection through the server's inspector; store: the " +
      "collections' files under DATA_DIR/db. Documents counted from each file (the last line of an id " +
      "wins), at the start on the server's folder and at the end after the server stopped; live MB: " +
      "those documents' last lines, about what NeDB's compaction at the next start leaves.",
  ].join("\n\n");
  const sections = [
    { title: "Over time", rows: overTime },
    { title: "Collections", rows: collections },
    { title: "Requests by route", rows: routes },
  ];
  process.stdout.write(`${writeResults("soak", header, sections, true)}\n`);
  if (errors > 0) throw new Error(`soak: ${errors} unexpected answers`);
}
