/**
 * The process's policy for exceptions nobody caught: log the error with the request it belongs to, then
 * exit non-zero so the supervisor (systemd, Kubernetes, compose) starts a clean process. Never swallow
 * and go on: after an uncaught exception the process's state is unknown.
 */
import { currentRequestID } from "./request-context";

export interface CrashLogger {
  fatal(...args: unknown[]): void;
}

export interface CrashOptions {
  logger: CrashLogger;
  /** process.exit, injected by tests. */
  exit?: (code: number) => void;
  /** The process whose events are watched (tests pass an emitter). */
  proc?: Pick<NodeJS.Process, "on">;
}

/** The exit code after an uncaught exception or unhandled rejection (Node's own is 1 too). */
export const CRASH_EXIT_CODE = 1;

/** The request id an error carries (tagged where it was raised), else that of the work that failed. */
export function requestIdOf(err: unknown): string | undefined {
  const tagged = (err as { requestID?: unknown } | null)?.requestID;
  return typeof tagged === "string" ? tagged : currentRequestID();
}

export function installCrashHandlers(opts: CrashOptions): void {
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  const proc = opts.proc ?? process;
  let crashing = false;
  const crash = (kind: string) => (err: unknown) => {
    if (crashing) return;
    crashing = true;
    try {
      const requestID = requestIdOf(err);
      const message = err instanceof Error ? err.message : String(err);
      opts.logger.fatal(`${kind}: ${message}; exiting`, { requestID: requestID ?? null }, err);
    } catch {
      // Logging must not stand between the process and its exit.
    } finally {
      exit(CRASH_EXIT_CODE);
    }
  };
  proc.on("uncaughtException", crash("Uncaught exception"));
  proc.on("unhandledRejection", crash("Unhandled rejection"));
}
