/**
 * The HTTP server's time bounds, named constants here but for HTTP_KEEP_ALIVE_TIMEOUT_MS (a setting: it
 * must exceed the idle timeout of the load balancer in front). Node's
 * defaults fit a general-purpose server, not a mobile API behind which a stalled client holds a socket,
 * parser state and possibly an upload: a minute for the headers, five for the whole request, and checks
 * only every 30 s. Here:
 * - headers: HTTP_HEADERS_TIMEOUT_MS (Node's headersTimeout), checked every second;
 * - a body without a byte: HTTP_BODY_IDLE_TIMEOUT_MS (gateway/body-watch);
 * - the whole request, headers in to answer out: HTTP_REQUEST_TIMEOUT_MS, or UPLOAD_TIMEOUT_MS
 *   (shared/contracts/stores) for an upload (the body readers' deadline, then gateway/request-deadlines'
 *   504);
 * - an idle keep-alive connection: HTTP_KEEP_ALIVE_TIMEOUT_MS.
 */
import type { IncomingMessage, ServerOptions } from "node:http";
import type { Config } from "../../shared/config";
import { UPLOAD_TIMEOUT_MS } from "../../shared/contracts/stores";
import { isUploadRequest } from "./routes";

/**
 * The longest a client may take to send its headers: ten seconds, which a phone on a poor network meets
 * with room to spare (headers are a few hundred bytes), while a connection trickling them byte by byte
 * to hold a socket is cut within seconds rather than Node's minute.
 */
export const HTTP_HEADERS_TIMEOUT_MS = 10_000;

/**
 * The longest a request body may go without a byte: ten seconds, as for the headers, so a stalled
 * client's body (an upload's included) frees its parser and slot, while a slow but moving one goes on.
 */
export const HTTP_BODY_IDLE_TIMEOUT_MS = 10_000;

/**
 * The longest any request but an upload may take, headers in to answer out: thirty seconds, three times
 * an action call's REQUEST_TIMEOUT_MS by default, so a call that times out is answered in the spec's
 * shape first, and a client is never left waiting past what a mobile app would.
 */
export const HTTP_REQUEST_TIMEOUT_MS = 30_000;

/** How often Node looks for connections past their header or request time (its default is 30 s). */
export const CONNECTION_CHECK_MS = 1000;

/**
 * A request is answered 504 (gateway/request-deadlines) this long after the body readers' deadline, so a body still arriving
 * at the deadline is answered 408 by its reader, and only a slow answer meets the 504.
 */
export const REST_TIMEOUT_MARGIN_MS = 1000;

/** A request as the gateway times it: when it came in, and its deadline, set when the gateway takes it. */
export type TimedRequest = IncomingMessage & { $deadline?: number; $arrival?: Arrival };

/** When a request's headers were in, and how many bytes its connection had read by then. */
export interface Arrival {
  at: number;
  bytesRead: number;
}

/**
 * Notes when the request came in (its listener's first step), so that the time its body goes without a
 * byte counts from the last byte the client sent, not from when the gateway began to read it
 * (gateway/body-watch): authenticating first may take a while, and the client's silence meanwhile is
 * its own.
 */
export function markArrival(req: TimedRequest, now: number = Date.now()): void {
  req.$arrival = { at: now, bytesRead: req.socket?.bytesRead ?? 0 };
}

/**
 * When the whole of this request must be answered: HTTP_REQUEST_TIMEOUT_MS after the gateway took it, or
 * UPLOAD_TIMEOUT_MS for an upload. Fixed on first use (when moleculer-web asks for the call options of
 * the request) and kept on the request, so every reader of its body works to the same one.
 */
export function requestDeadline(req: TimedRequest, now = Date.now()): number {
  req.$deadline ??=
    now + (isUploadRequest(req.method, req.url) ? UPLOAD_TIMEOUT_MS : HTTP_REQUEST_TIMEOUT_MS);
  return req.$deadline;
}

export function httpServerOptions(config: Pick<Config, "httpKeepAliveTimeoutMs">): ServerOptions {
  return {
    headersTimeout: HTTP_HEADERS_TIMEOUT_MS,
    // Node's own bound on receiving a whole request, counted from its first byte: a backstop behind the
    // body readers' bounds (which answer first, in the spec's shape), for bodies no reader waits for.
    requestTimeout:
      HTTP_HEADERS_TIMEOUT_MS +
      Math.max(HTTP_REQUEST_TIMEOUT_MS, UPLOAD_TIMEOUT_MS) +
      2 * REST_TIMEOUT_MARGIN_MS,
    keepAliveTimeout: config.httpKeepAliveTimeoutMs,
    connectionsCheckingInterval: CONNECTION_CHECK_MS,
  };
}
