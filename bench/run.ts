/**
 * `npm run bench [-- --quick]`: builds, then runs each benchmark case against real server processes and
 * prints a table (also written as JSON and Markdown under bench/results/). It reports; it asserts no
 * speed (targets are printed beside the numbers).
 */
import { build, machineHeader, writeResults } from "./lib";
import { runMulticastBench } from "./multicast";
import { runUploadBench } from "./upload";

async function main(): Promise<void> {
  const quick = process.argv.includes("--quick");
  build();
  const header = machineHeader(quick ? "quick" : "full");
  // Quick runs (CI) only prove the bench still works; their numbers are not kept.
  const upload = await runUploadBench(quick);
  process.stdout.write(`${writeResults("upload", header, upload, !quick)}\n`);
  const multicast = await runMulticastBench(quick);
  process.stdout.write(`${writeResults("multicast", header, multicast, !quick)}\n`);
  if (upload.some((r) => r.status !== 200)) throw new Error("An upload did not succeed");
  if (multicast.some((r) => r.status !== "done" || r.sent !== r.devices))
    throw new Error("The multicast did not complete");
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).message}\n`);
  process.exit(1);
});
