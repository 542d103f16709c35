/**
 * `npm run bench [-- --quick]`: builds, then runs each benchmark case against real server processes and
 * prints a table (also written as JSON and Markdown under bench/results/). It reports; it asserts no
 * speed (targets are printed beside the numbers).
 */
import { build, machineHeader, writeResults } from "./lib";
import { runUploadBench } from "./upload";

async function main(): Promise<void> {
  const quick = process.argv.includes("--quick");
  build();
  const header = machineHeader(quick ? "quick" : "full");
  const rows = await runUploadBench(quick);
  // Quick runs (CI) only prove the bench still works; their numbers are not kept.
  process.stdout.write(`${writeResults("upload", header, rows, !quick)}\n`);
  if (rows.some((r) => r.status !== 200)) {
    throw new Error("An upload did not succeed");
  }
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).message}\n`);
  process.exit(1);
});
