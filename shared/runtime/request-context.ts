/**
 * The request a piece of asynchronous work belongs to (AsyncLocalStorage). The gateway runs each HTTP
 * request inside it, so an exception nobody caught (crash.ts) can still be logged with its request id.
 */
import { AsyncLocalStorage } from "node:async_hooks";

export interface RequestScope {
  /** The request id once known (the X-Request-ID header, else the one Moleculer gives the context). */
  requestID(): string | undefined;
}

export const requestContext = new AsyncLocalStorage<RequestScope>();

/** The request id of the work running now, if it belongs to a request. */
export function currentRequestID(): string | undefined {
  try {
    return requestContext.getStore()?.requestID();
  } catch {
    return undefined;
  }
}

/**
 * From Node 24, AsyncLocalStorage keeps its context in the async frame itself (AsyncContextFrame) and
 * costs next to nothing. Before that it runs on async_hooks' promise hooks, which cost a hot read dearly
 * on Node 20, on every promise (docs/decisions/0038). There the gateway does without it: the request
 * id still reaches the crash log on every error that escapes a request's own promise chain (the
 * gateway tags those), just not on one thrown from a detached callback.
 */
export const requestScopesAreCheap = Number(process.versions.node.split(".")[0]) >= 24;

/** Runs `fn` as part of a request where that is cheap (see above); otherwise just runs it. */
export function withinRequest<T>(scope: RequestScope, fn: () => T): T {
  return requestScopesAreCheap ? requestContext.run(scope, fn) : fn();
}
