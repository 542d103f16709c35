/**
 * `--node-options`: the Node options the servers start with, by process, given to node before the
 * script (as NODE_OPTIONS would be, without reaching the load generator in this process):
 * - `deployed`: each process of the distributed topology its kind's options as deployed
 *   (test/support/deployed.ts); the embedded server the gateway's;
 * - `kind=options;kind=options`, kinds being a service (`gateway`, `rounds`…), `embedded`, or `*` for
 *   every process, e.g. `--node-options "gateway=--max-old-space-size=1024 --max-semi-space-size=16"`.
 * Without it every server runs with Node's defaults.
 */
import { DEPLOYED, PROCESS_KINDS } from "../test/support/deployed";

export type NodeOptions = Record<string, string>;

const KINDS = new Set<string>([...PROCESS_KINDS, "embedded", "*"]);

export function parseNodeOptions(value: string | undefined): NodeOptions {
  if (value === undefined || value === "") return {};
  if (value === "deployed") {
    return {
      ...Object.fromEntries(PROCESS_KINDS.map((k) => [k, DEPLOYED[k].nodeOptions])),
      embedded: DEPLOYED.gateway.nodeOptions,
    };
  }
  const out: NodeOptions = {};
  for (const part of value
    .split(";")
    .map((p) => p.trim())
    .filter(Boolean)) {
    const eq = part.indexOf("=");
    const kind = eq > 0 ? part.slice(0, eq).trim() : "";
    if (!KINDS.has(kind))
      throw new Error(`--node-options: "${part}" names no process (${[...KINDS].join(", ")})`);
    out[kind] = part.slice(eq + 1).trim();
  }
  return out;
}

/** The node arguments of process `kind`. */
export const nodeArgsOf = (options: NodeOptions, kind: string): string[] =>
  (options[kind] ?? options["*"] ?? "").split(/\s+/).filter(Boolean);

/** Node arguments for every process of a distributed system that has options. */
export function distributedNodeArgs(options: NodeOptions): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const kind of PROCESS_KINDS) {
    const args = nodeArgsOf(options, kind);
    if (args.length > 0) out[kind] = args;
  }
  return out;
}

/** One line for a report: which options the servers ran with. */
export function describeNodeOptions(options: NodeOptions): string {
  const parts = Object.entries(options).map(([k, v]) => `${k}: \`${v || "(none)"}\``);
  return parts.length === 0
    ? "Node options: Node's defaults in every server."
    : `Node options: ${parts.join("; ")}; others Node's defaults.`;
}
