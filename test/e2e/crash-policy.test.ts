// Tier: one process only (the crash handlers in a child process of its own; no system runs).
/**
 * The crash policy in a real process: an exception nobody caught, thrown asynchronously inside a
 * request's context, is logged with that request's id and the process exits 1 (shared/runtime/crash).
 */
import { spawnSync } from "node:child_process";
import { root } from "../support/processes";

function run(script: string) {
  return spawnSync(process.execPath, ["--require", "tsx/cjs", "-e", script], {
    cwd: root,
    encoding: "utf8",
    timeout: 20_000,
  });
}

const prelude = `
const { installCrashHandlers } = require("./shared/runtime/crash");
const { requestContext } = require("./shared/runtime/request-context");
installCrashHandlers({ logger: { fatal: (...args) => console.error(JSON.stringify(args.slice(0, 2))) } });
setTimeout(() => console.log("still running"), 500);
`;

describe("crash policy (child process)", () => {
  it("when a request's work throws asynchronously, then its request id is logged and the process exits 1", () => {
    const res = run(
      `${prelude}requestContext.run({ requestID: () => "req-crash-1" }, () => setTimeout(() => { throw new Error("boom"); }, 10));`,
    );
    expect(res.status).toBe(1);
    expect(res.stdout).not.toMatch(/still running/);
    expect(res.stderr).toContain('"Uncaught exception: boom; exiting",{"requestID":"req-crash-1"}');
  });

  it("when a rejection is never handled, then it is logged and the process exits 1", () => {
    const res = run(
      `${prelude}requestContext.run({ requestID: () => "req-crash-2" }, () => setTimeout(() => { Promise.reject(new Error("late")); }, 10));`,
    );
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('"Unhandled rejection: late; exiting",{"requestID":"req-crash-2"}');
  });
});
