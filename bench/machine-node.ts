/**
 * Case 3's p99 target holds on the machine's Node as well as on production's (the performance issue).
 * So a bench that moved itself to production's Node (lib.ts, onProductionNode) also runs cases 1–3
 * embedded on the Node that started it, when that is another major, and reports case 3 from there:
 * cases 1 and 2 warm that server as they warm the main run's, and their targets are production's.
 * That bench writes its outcomes to a file (OUTCOME_FILE_FLAG) instead of a report.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnSync } from "node:child_process";
import type { TopologyOutcome } from "./http";
import { MACHINE_NODE_VARIABLE } from "./lib";

export const OUTCOME_FILE_FLAG = "outcome-file";

const major = (version: string) => Number(version.replace(/^v/, "").split(".")[0]);

/** The Node that started this bench and its version, when that is another major than this one's. */
export function otherMachineNode(): { node: string; version: string } | null {
  const node = process.env[MACHINE_NODE_VARIABLE];
  if (!node || node === process.execPath) return null;
  const asked = spawnSync(node, ["-p", "process.version"], { encoding: "utf8" });
  const version = asked.status === 0 ? asked.stdout.trim() : "";
  if (!version || major(version) === major(process.version)) return null;
  return { node, version };
}

/** Case 3 embedded on `machine`'s Node (after cases 1 and 2). */
export function case3OnMachineNode(
  machine: { node: string; version: string },
  quick: boolean,
  log: (line: string) => void,
): TopologyOutcome {
  const file = path.join(os.tmpdir(), `bench-outcomes-${process.pid}.json`);
  log(`cases 1–3 embedded on the machine's Node ${machine.version}, for case 3`);
  const args = ["--only", "1,2,3", "--topology", "embedded", `--${OUTCOME_FILE_FLAG}`, file];
  const run = spawnSync(
    machine.node,
    [...process.execArgv, process.argv[1], ...args, ...(quick ? ["--quick"] : [])],
    {
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, BENCH_NODE: "machine", [MACHINE_NODE_VARIABLE]: "" },
    },
  );
  if (run.status !== 0) throw new Error(`the bench on Node ${machine.version} failed (status ${run.status})`);
  const outcomes = (JSON.parse(fs.readFileSync(file, "utf8")) as TopologyOutcome[]).flatMap(
    (t) => t.outcomes,
  );
  fs.rmSync(file, { force: true });
  const case3 = outcomes.filter((o) => o.scenario.key === "3");
  if (case3.length !== 1) throw new Error(`the bench on Node ${machine.version} gave no case 3`);
  return { topology: "embedded", outcomes: case3, node: machine.version };
}
