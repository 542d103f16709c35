/**
 * `npm run docs:config`: rewrites the configuration tables of docs/operations.md from the config schema
 * (checked by test/unit/bin/config-table.test.ts, so they cannot drift unnoticed). The settings are shown in
 * the schema's order, cut into groups where each group's first setting appears; a setting added to the
 * schema lands in the group it is written in.
 */
import fs from "node:fs";
import path from "node:path";
import { configSchema } from "../shared/config";

const START = "<!-- config-table:start -->";
const END = "<!-- config-table:end -->";

/** Each group: its title, the prose section that explains it, and its first setting in the schema. */
const GROUPS: ReadonlyArray<[title: string, section: string, first: string]> = [
  ["Process", "running-it", "NODE_ENV"],
  ["Broker, cache and logs", "credentials", "NAMESPACE"],
  ["Stores", "storage", "DATA_DIR"],
  ["Tokens", "keys", "JWT_PRIVATE_KEYS"],
  ["Requests and uploads", "slow-clients", "PICTURE_MAX_BYTES"],
  ["Push and retention", "retention", "PUSH_TRANSPORT"],
  ["Gateway caches, limits and timeouts", "settings-to-tune", "AUTH_CACHE_SECONDS"],
  ["Tracing and hooks", "tracing", "TRACING_ENDPOINT"],
];

const cell = (text: string) => text.replace(/\|/g, "\\|");

export function configTables(): string {
  const entries = Object.values(configSchema);
  const starts = GROUPS.map(([, , first]) => {
    const at = entries.findIndex((e) => e.env === first);
    if (at < 0) throw new Error(`config-table: no setting ${first} starts a group`);
    return at;
  });
  if (starts[0] !== 0 || starts.some((at, i) => i > 0 && at <= starts[i - 1])) {
    throw new Error(
      "config-table: the groups' first settings must follow the schema's order, the first first",
    );
  }
  return GROUPS.map(([title, section], i) => {
    const rows = entries
      .slice(starts[i], starts[i + 1] ?? entries.length)
      .map((e) => `| \`${e.env}\` | ${e.default === "" ? "(empty)" : `\`${e.default}\``} | ${cell(e.doc)} |`);
    return [
      `**${title}** ([more](#${section}))`,
      "",
      "| Variable | Default | Meaning |",
      "|---|---|---|",
      ...rows,
    ].join("\n");
  }).join("\n\n");
}

if (require.main === module) {
  const file = path.resolve(__dirname, "..", "docs", "operations.md");
  const doc = fs.readFileSync(file, "utf8");
  const start = doc.indexOf(START);
  const end = doc.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/operations.md lacks the ${START} … ${END} markers`);
  fs.writeFileSync(file, `${doc.slice(0, start + START.length)}\n\n${configTables()}\n\n${doc.slice(end)}`);
}
