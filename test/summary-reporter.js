// Prints one closing line, "tests: N passed, N failed, N skipped", after jest's own summary (at process
// exit, since jest's summary is written after the reporters' onRunComplete), so a CI log ends on a count.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const { numPassedTests, numFailedTests, numPendingTests, numTodoTests, numRuntimeErrorTestSuites } =
      results;
    const failed = numFailedTests + numRuntimeErrorTestSuites;
    const line = `tests: ${numPassedTests} passed, ${failed} failed, ${numPendingTests + numTodoTests} skipped\n`;
    process.once("exit", () => process.stderr.write(line));
  }
}
module.exports = SummaryReporter;
