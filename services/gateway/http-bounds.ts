/**
 * The HTTP server's time bounds, all from the configuration (docs: the configuration table). Node's
 * defaults fit a general-purpose server, not a mobile API behind which a stalled client holds a socket,
 * parser state and possibly an upload: a minute for the headers, five for the whole request, and checks
 * only every 30 s. Here:
 * - headers: HTTP_HEADERS_TIMEOUT_MS (Node's headersTimeout), checked every second;
 * - a body without a byte: HTTP_BODY_IDLE_TIMEOUT_MS (gateway/body-watch);
 * - the whole request, headers in to answer out: HTTP_REQUEST_TIMEOUT_MS, or UPLOAD_TIMEOUT_MS for an
 *   upload (the body readers' deadline, then gateway/request-deadlines' 504);
 * - an idle keep-alive connection: HTTP_KEEP_ALIVE_TIMEOUT_MS.
 */
import type { IncomingMessage, ServerOptions } from "node:http";
import type { Config } from "../../shared/config";
import { isUploadRequest } from "./routes";

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
export function requestDeadline(config: Config, req: TimedRequest, now = Date.now()): number {
  req.$deadline ??=
    now + (isUploadRequest(req.method, req.url) ? config.uploadTimeoutMs : config.httpRequestTimeoutMs);
  return req.$deadline;
}

export function httpServerOptions(config: Config): ServerOptions {
  return {
    headersTimeout: config.httpHeadersTimeoutMs,
    // Node's own bound on receiving a whole request, counted from its first byte: a backstop behind the
    // body readers' bounds (which answer first, in the spec's shape), for bodies no reader waits for.
    requestTimeout:
      config.httpHeadersTimeoutMs +
      Math.max(config.httpRequestTimeoutMs, config.uploadTimeoutMs) +
      2 * REST_TIMEOUT_MARGIN_MS,
    keepAliveTimeout: config.httpKeepAliveTimeoutMs,
    connectionsCheckingInterval: CONNECTION_CHECK_MS,
  };
}
