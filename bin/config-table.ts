/**
 * `npm run docs:config`: rewrites the configuration table of docs/operations.md from the config schema
 * (the table is also checked by test/unit/bin/config-table.test.ts, so it cannot drift unnoticed).
 */
import fs from "node:fs";
import path from "node:path";
import { configSchema } from "../shared/config";

const START = "<!-- config-table:start -->";
const END = "<!-- config-table:end -->";

const rows = Object.values(configSchema).map(
  (e) => `| \`${e.env}\` | ${e.default === "" ? "(empty)" : `\`${e.default}\``} | ${e.doc} |`,
);
const table = ["| Variable | Default | Meaning |", "|---|---|---|", ...rows].join("\n");
const file = path.resolve(__dirname, "..", "docs", "operations.md");
const doc = fs.readFileSync(file, "utf8");
const start = doc.indexOf(START);
const end = doc.indexOf(END);
if (start < 0 || end < start) throw new Error(`docs/operations.md lacks the ${START} … ${END} markers`);
fs.writeFileSync(file, `${doc.slice(0, start + START.length)}\n\n${table}\n\n${doc.slice(end)}`);
