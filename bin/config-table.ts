/**
 * `npm run docs:config`: rewrites the README's configuration table from the config schema (the table is
 * also checked by test/unit/readme-config.test.ts, so it cannot drift unnoticed).
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
const file = path.resolve(__dirname, "..", "README.md");
const readme = fs.readFileSync(file, "utf8");
const start = readme.indexOf(START);
const end = readme.indexOf(END);
if (start < 0 || end < start) throw new Error(`README.md lacks the ${START} … ${END} markers`);
fs.writeFileSync(file, `${readme.slice(0, start + START.length)}\n\n${table}\n\n${readme.slice(end)}`);
