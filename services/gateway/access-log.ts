/**
 * The access log: a line per request the gateway served, for a share of requests (ACCESS_LOG_SAMPLE;
 * 0, the default, is off and costs nothing per request). What it costs when on: docs/performance.md
 * ("The access log"). A request is logged when its connection is done with it, as it is counted
 * (gateway/http-metrics): method, the route's template (never the URL, which may carry ids a log should
 * not collect), status (499, as nginx logs it, when the client left before an answer went out),
 * duration, request id and trace id. With LOG_FORMAT=json the fields are the line's own
 * (shared/runtime/json-log); otherwise one readable line.
 */
import type { ServerResponse } from "node:http";
import type { LoggerInstance } from "moleculer";
import { w3cTraceId } from "../../shared/tracing";
import { routeTemplate } from "./http-metrics";
import type { RouteSpec } from "./routes";

type RoutedRequest = Parameters<typeof routeTemplate>[0];

export interface AccessLine {
  method: string;
  route: string;
  status: number;
  duration_ms: number;
  request_id: string | null;
  trace_id: string | null;
}

/** The status nginx logs for a request whose client closed the connection before the answer. */
export const CLIENT_CLOSED = 499;

export function accessLine(
  req: RoutedRequest,
  res: ServerResponse,
  spec: RouteSpec | undefined,
  requestId: string | undefined,
  startedNs: bigint,
): AccessLine {
  return {
    method: req.method ?? "",
    route: routeTemplate(req, spec),
    status: res.headersSent ? res.statusCode : CLIENT_CLOSED,
    duration_ms: Math.round(Number(process.hrtime.bigint() - startedNs) / 1e4) / 100,
    request_id: requestId ?? null,
    trace_id: requestId ? w3cTraceId(requestId) : null,
  };
}

/** The readable form, for LOG_FORMAT=short. */
export const shortAccessLine = (l: AccessLine): string =>
  `${l.method} ${l.route} ${l.status} ${l.duration_ms} ms request_id=${l.request_id ?? "-"} trace_id=${l.trace_id ?? "-"}`;

export class AccessLog {
  private constructor(
    private readonly share: number,
    private readonly logger: LoggerInstance,
    private readonly json: boolean,
  ) {}

  /** The log, or null when off (then nothing is done per request). */
  static of(share: number, logger: LoggerInstance, json: boolean): AccessLog | null {
    return share > 0 ? new AccessLog(share, logger, json) : null;
  }

  /** Logs `req` once its connection is done with it, if it falls in the sampled share. */
  track(
    req: RoutedRequest,
    res: ServerResponse,
    specOf: (req: RoutedRequest) => RouteSpec | undefined,
    requestIdOf: (req: RoutedRequest) => string | undefined,
  ): void {
    if (this.share < 1 && Math.random() >= this.share) return;
    const started = process.hrtime.bigint();
    res.once("close", () => {
      const line = accessLine(req, res, specOf(req), requestIdOf(req), started);
      if (this.json) this.logger.info(line, "request");
      else this.logger.info(shortAccessLine(line));
    });
  }
}
