/**
 * `npm run docs:decisions`: rewrites docs/decisions/README.md, the index of the decisions, from the files
 * themselves (number, title, kind, date). test/unit/bin/decisions-index.test.ts checks that the
 * committed index is what this renders, so it cannot drift from the files.
 */
import fs from "node:fs";
import path from "node:path";

export const DECISIONS_DIR = path.resolve(__dirname, "..", "docs", "decisions");

export interface Decision {
  number: string;
  file: string;
  title: string;
  date: string;
  kind: string;
  bytes: number;
}

const FIELD = (name: string) => new RegExp(`^- ${name}: (.+)$`, "m");

/** One decision file's header fields; throws with the file's name when one is missing or malformed. */
export function parseDecision(file: string, text: string): Decision {
  const fail = (what: string): never => {
    throw new Error(`${file}: ${what}`);
  };
  const heading =
    /^# (\d{4})\. (.+)$/m.exec(text.split("\n")[0] ?? "") ?? fail("first line is not '# NNNN. Title'");
  const [, number, title] = heading;
  if (!file.startsWith(`${number}-`)) fail(`heading number ${number} does not match the file name`);
  const rawDate = FIELD("Date").exec(text)?.[1] ?? fail("no '- Date:' line");
  // The first date is the index's; a note may follow it ("2026-11-22 (first written in 046e75d)").
  const date =
    /^\d{4}-\d{2}-\d{2}\b/.exec(rawDate)?.[0] ?? fail(`date '${rawDate}' does not start YYYY-MM-DD`);
  const rawStatus = FIELD("Status").exec(text)?.[1] ?? fail("no '- Status:' line");
  const kind = FIELD("Kind").exec(text)?.[1] ?? fail("no '- Kind:' line");
  if (!/^(spec gap|engineering)\b/.test(kind)) fail(`kind '${kind}' is neither 'spec gap' nor 'engineering'`);
  // Only decisions in force have files: one merged into another or superseded is deleted (git keeps its
  // text) and named under its successor's Revisions, so a citation can never land on a stub.
  if (!/^accepted(;|$)/.test(rawStatus)) {
    fail(`status '${rawStatus}' is not 'accepted' (a decision no longer in force is deleted, not kept)`);
  }
  return {
    number,
    file,
    title,
    date,
    kind: kind.startsWith("spec gap") ? "spec gap" : "engineering",
    bytes: Buffer.byteLength(text),
  };
}

export function readDecisions(dir = DECISIONS_DIR): Decision[] {
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d{4}-.+\.md$/.test(f))
    .sort()
    .map((f) => parseDecision(f, fs.readFileSync(path.join(dir, f), "utf8")));
}

const PREAMBLE = `# Decisions

What we chose, why, and what follows from it: one file per choice a maintainer must know.

- **spec gap**: the interface left something open, and this is what the API does there;
- **engineering**: how the system does something, with the measurement that decided it.

A decision that holds measured figures is where they live; other documents and code comments point to
it. Experiments and levers not taken are a few lines in the decision they informed; their full texts
are in git history. Amendments are dated lines at the end of a decision. Only decisions in force are
here: one merged into another, or superseded, is deleted (git keeps it) and its successor names it under
Revisions. Numbers are never reused.

This index is generated from the files (\`npm run docs:decisions\`); do not edit it by hand.`;

/** The index: the decisions in force as a table. */
export function renderIndex(decisions: Decision[]): string {
  const rows = decisions.map((d) => `| [${d.number}](${d.file}) | ${d.title} | ${d.kind} | ${d.date} |`);
  return [PREAMBLE, "", "| # | Decision | Kind | Date |", "| --- | --- | --- | --- |", ...rows, ""].join(
    "\n",
  );
}

if (require.main === module) {
  const file = path.join(DECISIONS_DIR, "README.md");
  fs.writeFileSync(file, renderIndex(readDecisions()));
}
