/**
 * Summarises a V8 .cpuprofile (node --cpu-prof): where the samples were taken (self time) by function
 * and by area (a package, a project folder, Node's internals, the garbage collector), and the inclusive
 * time of the project's own functions.
 */
import fs from "node:fs";
import path from "node:path";
import type { Row } from "./lib";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileSummary {
  seconds: number;
  samples: number;
  /** Share of the samples in which the process was doing anything (not idle). */
  busy: number;
  functions: Row[];
  areas: Row[];
  project: Row[];
}

const SPECIAL = new Set(["(idle)", "(program)", "(garbage collector)", "(root)"]);

function where(url: string, root: string): string {
  if (!url) return "";
  const file = url.replace(/^file:\/\//, "");
  return file.startsWith(root) ? path.relative(root, file) : file;
}

/** node_modules/<package> (scoped ones too), a project folder, or node's own. */
function areaOf(name: string, file: string): string {
  if (SPECIAL.has(name) && !file) return name;
  if (!file) return "(native)";
  if (file.startsWith("node:")) return "node internals";
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  if (m) return m[1];
  const parts = file.replace(/^dist\//, "").split("/");
  return parts.length > 1 ? `project: ${parts.slice(0, 2).join("/")}` : `project: ${parts[0]}`;
}

const pct = (n: number, of: number) => `${((100 * n) / of).toFixed(1)}%`;

/**
 * Microseconds of the monotonic clock, as V8 stamps its samples: `process.hrtime.bigint() / 1000n` of
 * any process on the same machine (Linux, CLOCK_MONOTONIC), so the load generator can mark the window.
 */
export interface Window {
  from: number;
  to: number;
}

export const monotonicMicros = (): number => Number(process.hrtime.bigint() / 1000n);

/** With a `window`, only the samples taken inside it count (the load, without start-up and seeding). */
export function summariseProfile(file: string, root: string, top = 25, window?: Window): ProfileSummary {
  const profile = JSON.parse(fs.readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  // Each sample's time is the delta to the next one (the last sample gets the mean interval).
  const total = profile.samples.length;
  const meanMs = (profile.endTime - profile.startTime) / 1000 / Math.max(1, total);
  const selfMs = new Map<number, number>();
  let at = profile.startTime;
  let counted = 0;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i];
    if (window && (at < window.from || at > window.to)) return;
    counted++;
    const ms = i + 1 < total ? profile.timeDeltas[i + 1] / 1000 : meanMs;
    selfMs.set(id, (selfMs.get(id) ?? 0) + ms);
  });
  const allMs = [...selfMs.values()].reduce((a, b) => a + b, 0);
  const idleMs = [...selfMs.entries()]
    .filter(([id]) => byId.get(id)?.callFrame.functionName === "(idle)")
    .reduce((a, [, ms]) => a + ms, 0);
  const busyMs = allMs - idleMs;

  const keyOf = (n: ProfileNode) => {
    const f = where(n.callFrame.url, root);
    const name = n.callFrame.functionName || "(anonymous)";
    return { key: `${name} ${f}:${n.callFrame.lineNumber + 1}`, name, file: f };
  };
  const fn = new Map<string, { name: string; file: string; line: number; ms: number }>();
  const area = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, ms] of selfMs) {
    const n = byId.get(id) as ProfileNode;
    if (n.callFrame.functionName === "(idle)") continue;
    const { key, name, file: f } = keyOf(n);
    const entry = fn.get(key) ?? { name, file: f, line: n.callFrame.lineNumber + 1, ms: 0 };
    entry.ms += ms;
    fn.set(key, entry);
    const a = areaOf(name, f);
    area.set(a, (area.get(a) ?? 0) + ms);
    // Inclusive time of project functions: every distinct project frame on the sample's stack.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const k = keyOf(byId.get(cur) as ProfileNode);
      if (k.file.startsWith("dist/") && !seen.has(k.key)) {
        seen.add(k.key);
        inclusive.set(k.key, (inclusive.get(k.key) ?? 0) + ms);
      }
    }
  }

  const functions = [...fn.values()]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, top)
    .map((e) => ({
      function: e.name,
      where: e.file ? `${e.file}:${e.line}` : "",
      "self ms": e.ms.toFixed(0),
      "% of busy": pct(e.ms, busyMs),
    }));
  const areas = [...area.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, ms]) => ({ area: name, "self ms": ms.toFixed(0), "% of busy": pct(ms, busyMs) }));
  const project = [...inclusive.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, ms]) => ({
      "project function": key,
      "inclusive ms": ms.toFixed(0),
      "% of busy": pct(ms, busyMs),
    }));
  return {
    seconds: allMs / 1000,
    samples: counted,
    busy: allMs > 0 ? busyMs / allMs : 0,
    functions,
    areas,
    project,
  };
}
