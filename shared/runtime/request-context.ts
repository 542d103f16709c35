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
