/**
 * docs/architecture.md against the code: the diagram's nodes are the services and the infrastructure
 * the code has, and the hooks table states exactly the version ranges the hooks declare.
 */
import fs from "node:fs";
import path from "node:path";
import { HOOK_NAMES, type InternalsHook } from "../../../shared/runtime/internals";
import { natsAbandonedDialsHook } from "../../../shared/runtime/nats-abandoned-dials";

const root = path.resolve(__dirname, "../../..");
const read = (file: string) => fs.readFileSync(path.join(root, file), "utf8");
const doc = read("docs/architecture.md");

/** The first ```mermaid block of the document. */
function mermaidBlock(text: string): string {
  const m = /```mermaid\n([\s\S]*?)\n```/.exec(text);
  if (!m) throw new Error("docs/architecture.md has no mermaid block");
  return m[1];
}

/** The node ids of a flowchart (labels, edge texts and subgraph ids left out) and its subgraph ids. */
function flowchartIds(block: string): { nodes: Set<string>; subgraphs: Set<string> } {
  const nodes = new Set<string>();
  const subgraphs = new Set<string>();
  for (const raw of block.split("\n").slice(1)) {
    const line = raw.trim();
    if (line === "" || line === "end" || line.startsWith("%%")) continue;
    const sub = /^subgraph\s+([A-Za-z][\w-]*)/.exec(line);
    if (sub) {
      subgraphs.add(sub[1]);
      continue;
    }
    const bare = line
      .replace(/\|[^|]*\|/g, " ")
      .replace(/(\(\[|\[\(|\[|\(|\{)[^\])}]*(\]\)|\)\]|\]|\)|\})/g, " ");
    for (const word of bare.split(/<-->|-->|-\.->|---|&|\s+/)) {
      if (/^[A-Za-z][\w-]*$/.test(word)) nodes.add(word);
    }
  }
  for (const s of subgraphs) nodes.delete(s);
  return { nodes, subgraphs };
}

/** Infrastructure a diagram may show, each with where the code uses it. */
const INFRASTRUCTURE: Record<string, [file: string, evidence: RegExp]> = {
  nats: ["shared/runtime/nats-options.ts", /from "nats"/],
  redis: ["shared/runtime/redis-options.ts", /ioredis/],
  mongodb: ["shared/storage/mongo.ts", /mongoose/],
  nedb: ["shared/storage/nedb.ts", /from "@seald-io\/nedb"/],
  gridfs: ["services/stores/gridfs-blob-store.ts", /GridFSBucket/],
  media: ["services/stores/open-blob-store.ts", /LocalBlobStore/],
  fcm: ["services/notifier/transport.ts", /firebase-admin/],
};
/** The one node outside the system. */
const CLIENTS = "clients";

describe("docs/architecture.md's diagram", () => {
  const { nodes } = flowchartIds(mermaidBlock(doc));
  const serviceFiles = fs
    .readdirSync(path.join(root, "services"))
    .filter((f) => f.endsWith(".service.ts"))
    .map((f) => f.replace(/\.service\.ts$/, ""))
    .sort();

  it("when its nodes are read, then the services it names are exactly the services/<name>.service.ts files", () => {
    const services = [...nodes].filter((n) => n !== CLIENTS && !(n in INFRASTRUCTURE)).sort();
    expect(services).toEqual(serviceFiles);
  });

  it("when its infrastructure nodes are read, then the code uses each of them", () => {
    const infrastructure = [...nodes].filter((n) => n in INFRASTRUCTURE);
    expect(infrastructure.length).toBeGreaterThan(0);
    for (const node of infrastructure) {
      const [file, evidence] = INFRASTRUCTURE[node];
      expect({ node, used: evidence.test(read(file)) }).toEqual({ node, used: true });
    }
  });

  it("when a line names several nodes, then the parser finds each of them", () => {
    const parsed = flowchartIds(
      "flowchart LR\n  subgraph g [a title]\n    a\n  end\n  a & b -->|x y| c[(C d)]\n  g -.-> e([E])",
    );
    expect([...parsed.nodes].sort()).toEqual(["a", "b", "c", "e"]);
  });
});

/** The rows of the hooks table, by hook name: its cells by column header. */
function hookRows(text: string): Map<string, Record<string, string>> {
  const start = text.indexOf("## Hooks into other libraries' internals");
  if (start < 0) throw new Error("docs/architecture.md has no hooks section");
  const end = text.indexOf("\n## ", start + 1);
  const section = text.slice(start, end < 0 ? undefined : end);
  const lines = section.split("\n").filter((l) => l.startsWith("|"));
  const cells = (line: string) =>
    line
      .slice(1, -1)
      .split(" | ")
      .map((c) => c.trim());
  const header = cells(lines[0]);
  const rows = new Map<string, Record<string, string>>();
  for (const line of lines.slice(2)) {
    const row = Object.fromEntries(cells(line).map((c, i) => [header[i], c]));
    rows.set(row.hook.replace(/`/g, ""), row);
  }
  return rows;
}

describe("docs/architecture.md's hooks table", () => {
  const hooks: Array<InternalsHook<never>> = [natsAbandonedDialsHook] as Array<InternalsHook<never>>;
  /** What the table must state for each hook: the code's own library and range. */
  const declared = new Map<string, string>(hooks.map((h) => [h.name, `\`${h.library} ${h.versions}\``]));
  const rows = hookRows(doc);

  it("when every hook of the code is listed here, then this test knows each one's declared range", () => {
    expect([...declared.keys()].sort()).toEqual([...HOOK_NAMES].sort());
  });

  it("when its rows are read, then they are exactly the hooks the code has", () => {
    expect([...rows.keys()].sort()).toEqual([...HOOK_NAMES].sort());
  });

  it.each([...HOOK_NAMES])(
    "when %s's row is read, then it states the supported versions the code declares",
    (name) => {
      expect(rows.get(name)?.["supported versions"]).toBe(declared.get(name));
    },
  );
});
