/**
 * `npm run -s bench:goals -- <bench result .json files…>`: the goals of cases 1, 2, 8 and 9
 * (bench/goals.ts) over several runs of `npm run bench` (at least three): each goal's value in every
 * run, their lowest, median and highest, and whether the goal held in all of them. Prints Markdown;
 * writes nothing.
 */
import fs from "node:fs";
import path from "node:path";
import { GOALS_TITLE, MIN_RUNS, combineGoals } from "./goals";
import { writeResults, type Section } from "./lib";

export function goalsOf(file: string): Section["rows"] {
  const { sections } = JSON.parse(fs.readFileSync(file, "utf8")) as { sections?: Section[] };
  const goals = sections?.find((s) => s.title === GOALS_TITLE);
  if (!goals)
    throw new Error(`${file} has no "${GOALS_TITLE}" section (a run before the goals, or not a bench run)`);
  return goals.rows;
}

function main(): void {
  const files = process.argv.slice(2).filter((a) => !a.startsWith("--"));
  if (files.length === 0)
    throw new Error("name the bench runs' .json files, e.g. bench/results/bench-*.json");
  const rows = combineGoals(files.map(goalsOf));
  const header = [
    `${files.length} runs: ${files.map((f) => path.basename(f)).join(", ")}.`,
    `A goal holds when it was met in every run, over at least ${MIN_RUNS} runs. Shares in %, p99 as a multiple.`,
  ].join("\n\n");
  process.stdout.write(`${writeResults("goals", header, [{ title: "Goals over the runs", rows }], false)}\n`);
}

if (require.main === module) {
  try {
    main();
  } catch (err) {
    process.stderr.write(`bench:goals failed: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
