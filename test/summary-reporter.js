// Prints one closing line, "tests: N passed, N failed, N skipped", after jest's own summary (at process
// exit, since jest's summary is written after the reporters' onRunComplete), so a CI log ends on a count.
//
// On a 2-core machine jest runs every suite in its own process (one worker or fewer means in band), so a
// handle a test leaves open (a socket, a child process, a timer) keeps jest alive after the run, and CI
// would wait for its time limit instead of ending. If the process is still up LEAK_GRACE_MS after the run,
// the handles still open are listed and the process exits with jest's own exit code.
const LEAK_GRACE_MS = 10_000;

function describeHandle(handle) {
  const kind = handle?.constructor?.name ?? typeof handle;
  if (Array.isArray(handle?.spawnargs)) return `${kind} pid ${handle.pid}: ${handle.spawnargs.join(" ")}`;
  if (typeof handle?.address === "function" && handle.listening !== undefined) {
    return `${kind} listening on ${JSON.stringify(handle.address())}`;
  }
  if (handle?.remotePort !== undefined || handle?.localPort !== undefined) {
    return `${kind} ${handle.localAddress}:${handle.localPort} -> ${handle.remoteAddress}:${handle.remotePort}`;
  }
  return kind;
}

function openHandles() {
  // process.getActiveResourcesInfo() (documented) names only each resource's type; the handles
  // themselves, where this Node still has the accessor, say which child or socket it is.
  const list = typeof process._getActiveHandles === "function" ? process._getActiveHandles() : [];
  const own = new Set([process.stdin, process.stdout, process.stderr]);
  const handles = list.filter((h) => !own.has(h)).map(describeHandle);
  return { handles, resources: process.getActiveResourcesInfo() };
}

class SummaryReporter {
  onRunComplete(_contexts, results) {
    const { numPassedTests, numFailedTests, numPendingTests, numTodoTests, numRuntimeErrorTestSuites } =
      results;
    const failed = numFailedTests + numRuntimeErrorTestSuites;
    const line = `tests: ${numPassedTests} passed, ${failed} failed, ${numPendingTests + numTodoTests} skipped\n`;
    process.once("exit", () => process.stderr.write(line));
    require("node:timers")
      .setTimeout(() => {
        const { handles, resources } = openHandles();
        process.stderr.write(
          `jest was still running ${LEAK_GRACE_MS / 1000} s after the run: a test left open ` +
            `${resources.join(", ")}\n${handles.map((h) => `  ${h}\n`).join("")}`,
        );
        process.exit();
      }, LEAK_GRACE_MS)
      .unref();
  }
}
module.exports = SummaryReporter;
