/**
 * `node -r ts-node/register/transpile-only bench/upload-under-load.ts [--reps 3] [--seconds 10]
 * [--mb 50] [--topology embedded|distributed] [--variants alone,off,on]`: what pictures being uploaded cost the readers of the
 * same gateway, and what the scavenges of decision 0119 add to it.
 *
 * Three variants, each on fresh processes started as case 6 starts them (bench/upload.ts), the order
 * rotating from one repetition to the next: reads alone; reads while pictures are uploaded one after
 * another with the `upload-scavenge` hook forced off (`INTERNALS_HOOKS_OFF`); the same with it on. The
 * reads are case 1's (64 connections on one round, answered by the gateway's kept answers), so what
 * they measure is the gateway's own thread. Reported per variant: the reads' medians over the
 * repetitions, the uploads' rate, the gateway's CPU a second, its collections' pauses and scavenges a
 * second (every process runs with `--trace-gc`; the pauses are the first time of each line) and its
 * memory's growth at its peak during the measured reads, as case 6 reads it. Runs on production's Node when it
 * is installed, as the bench does; the report names the Node.
 */
import autocannon from "autocannon";
import { median } from "./ab";
import { cpuMillisOf } from "./cpu";
import { flag, machineHeader, onProductionNode, peakGrowthFrom, writeResults, type Row } from "./lib";
import { MB, startDistributedUploads, startEmbeddedUploads, upload, type UploadSystem } from "./upload";

interface Variant {
  key: string;
  name: string;
  uploads: boolean;
  env: Record<string, string>;
}

const VARIANTS: Variant[] = [
  { key: "alone", name: "reads alone", uploads: false, env: {} },
  {
    key: "off",
    name: "reads + uploads, hook off",
    uploads: true,
    env: { INTERNALS_HOOKS_OFF: "upload-scavenge" },
  },
  { key: "on", name: "reads + uploads, hook on", uploads: true, env: {} },
];

interface Sample {
  rps: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  errors: number;
  uploads: number;
  uploadMbPerSecond: number;
  gatewayCpuPerSecond: number;
  gatewayGrowthMb: number;
  gatewayGcMsPerSecond: number;
  gatewayScavengesPerSecond: number;
}

/** V8's `--trace-gc` line of one collection: its kind and its pause (the first of its two times). */
const TRACE_LINE = /: (Scavenge|Mark-Compact|Minor Mark-Sweep)\b.*?, ([\d.]+) \/ [\d.]+ ms/;

/** Adds up the collections the gateway's `--trace-gc` reports from now until `stop()`. */
function gcPauses(system: UploadSystem): { stop(): { ms: number; scavenges: number } } {
  const totals = { ms: 0, scavenges: 0 };
  let partial = "";
  const onData = (data: Buffer) => {
    const lines = (partial + data.toString("utf8")).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      const m = TRACE_LINE.exec(line);
      if (!m) continue;
      totals.ms += Number(m[2]);
      if (m[1] === "Scavenge") totals.scavenges++;
    }
  };
  const out = system.procs.gateway.stdout;
  out?.on("data", onData);
  return {
    stop() {
      out?.off("data", onData);
      return totals;
    },
  };
}

/** Uploads pictures of `bytes`, one after another, until `until()` is true. */
async function uploadWhile(system: UploadSystem, bytes: number, until: () => boolean) {
  let done = 0;
  let ms = 0;
  while (!until()) {
    const res = await upload(system.port, system.manifest, bytes);
    if (res.status !== 200) throw new Error(`upload answered ${res.status}`);
    done++;
    ms += res.ms;
  }
  return { done, mbPerSecond: done ? ((done * bytes) / MB / ms) * 1000 : 0 };
}

async function measure(system: UploadSystem, variant: Variant, seconds: number, bytes: number) {
  const url = `http://127.0.0.1:${system.port}/rounds/${system.manifest.rounds.open}`;
  const headers = { authorization: `Bearer ${system.manifest.users.alice.access_token}` };
  await autocannon({ url, headers, connections: 64, duration: 2 });
  const pid = system.procs.gateway.pid as number;
  const cpuBefore = cpuMillisOf(pid) ?? NaN;
  const growth = peakGrowthFrom(pid);
  const gc = gcPauses(system);
  let finished = false;
  const uploading = variant.uploads ? uploadWhile(system, bytes, () => finished) : undefined;
  const reads = await autocannon({ url, headers, connections: 64, duration: seconds });
  const cpu = ((cpuMillisOf(pid) ?? NaN) - cpuBefore) / seconds;
  const pauses = gc.stop();
  finished = true;
  const uploads = (await uploading) ?? { done: 0, mbPerSecond: 0 };
  const sample: Sample = {
    rps: reads.requests.average,
    p50: reads.latency.p50,
    p99: reads.latency.p99,
    p999: reads.latency.p99_9,
    max: reads.latency.max,
    errors: reads.errors + reads.non2xx,
    uploads: uploads.done,
    uploadMbPerSecond: uploads.mbPerSecond,
    gatewayCpuPerSecond: cpu,
    gatewayGrowthMb: growth() / MB,
    gatewayGcMsPerSecond: pauses.ms / seconds,
    gatewayScavengesPerSecond: pauses.scavenges / seconds,
  };
  return sample;
}

function rowOf(topology: string, variant: Variant, samples: Sample[]): Row {
  const m = (key: keyof Sample, digits = 0) => median(samples.map((s) => s[key])).toFixed(digits);
  const each = (key: keyof Sample) => samples.map((s) => s[key].toFixed(0)).join(", ");
  return {
    topology,
    variant: variant.name,
    "reads req/s": `${m("rps")} (${each("rps")})`,
    "p50 ms": m("p50"),
    "p99 ms": `${m("p99")} (${each("p99")})`,
    "p99.9 ms": m("p999"),
    "max ms": m("max"),
    "read errors": samples.reduce((a, s) => a + s.errors, 0),
    "uploads per run": m("uploads"),
    "upload MB/s": m("uploadMbPerSecond", 1),
    "gateway CPU ms/s": m("gatewayCpuPerSecond"),
    "gateway GC pauses ms/s": `${m("gatewayGcMsPerSecond", 1)} (${each("gatewayGcMsPerSecond")})`,
    "gateway scavenges/s": m("gatewayScavengesPerSecond", 1),
    "gateway peak growth MB": `${m("gatewayGrowthMb", 1)} (${each("gatewayGrowthMb")})`,
  };
}

async function main(): Promise<void> {
  onProductionNode();
  const reps = Number(flag("reps") ?? 3);
  const seconds = Number(flag("seconds") ?? 10);
  const bytes = Number(flag("mb") ?? 50) * MB;
  const only = flag("topology");
  const keys = (flag("variants") ?? "alone,off,on").split(",");
  const variants = VARIANTS.filter((v) => keys.includes(v.key));
  const topologies = [
    { name: "embedded", start: startEmbeddedUploads },
    { name: "distributed", start: startDistributedUploads },
  ].filter((t) => !only || t.name === only);
  const rows: Row[] = [];
  for (const topology of topologies) {
    const samples = variants.map((): Sample[] => []);
    for (let rep = 0; rep < reps; rep++) {
      for (let k = 0; k < variants.length; k++) {
        const i = (k + rep) % variants.length;
        const system = await topology.start(variants[i].env, ["--trace-gc"]);
        try {
          const s = await measure(system, variants[i], seconds, bytes);
          samples[i].push(s);
          process.stderr.write(
            `${topology.name} rep ${rep + 1} ${variants[i].name}: ${s.rps.toFixed(0)} req/s, ` +
              `p99 ${s.p99} ms, ${s.uploads} uploads\n`,
          );
        } finally {
          await system.stop();
        }
      }
    }
    rows.push(...variants.map((v, i) => rowOf(topology.name, v, samples[i])));
  }
  const header = [
    machineHeader("upload-under-load"),
    "",
    `${reps} repetitions, the variants' order rotating, each on fresh processes started as case 6 ` +
      `starts them; 2 s of warm-up reads, then ${seconds} s of case 1's reads (64 connections), during ` +
      `which ${bytes / MB} MB pictures are uploaded one after another (the uploading variants). ` +
      `Medians over the repetitions, each repetition's in brackets.`,
  ].join("\n");
  const md = writeResults("upload-under-load", header, [{ title: "Reads during uploads", rows }], true);
  process.stdout.write(`${md}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`upload-under-load failed: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
