/**
 * Per-route HTTP metrics of the gateway (metrics on only, METRICS_PORT): a counter of answers by route
 * template and status, and a histogram of their duration by route (names: shared/runtime/metric-names).
 * A request is counted when its connection is done with it: the answer went out, or the client left
 * first (status `aborted`). Labels come from the route table, never from the URL, so their number is
 * bounded whatever clients send.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ServiceBroker } from "moleculer";
import { httpMetrics } from "../../shared/runtime/metrics";
import type { RouteSpec } from "./routes";

interface RoutedRequest extends IncomingMessage {
  $alias?: { method?: string; fullPath?: string };
}

/** The template of the route that took the request (never its URL), or "(no route)". */
export function routeTemplate(req: RoutedRequest, spec: RouteSpec | undefined): string {
  return spec?.path ?? req.$alias?.fullPath ?? "(no route)";
}

/** The route label: the method and template of the route that took the request, or "(no route)". */
export function routeLabel(req: RoutedRequest, spec: RouteSpec | undefined): string {
  if (spec) return `${spec.method} ${spec.path}`;
  const alias = req.$alias;
  if (alias?.fullPath)
    return `${alias.method && alias.method !== "*" ? alias.method : "ANY"} ${routeTemplate(req, spec)}`;
  return "(no route)";
}

/** The status label: the answer's status, or `aborted` when none went out. */
export function statusLabel(res: ServerResponse): string {
  return res.headersSent ? String(res.statusCode) : "aborted";
}

export class HttpMetrics {
  private constructor(private readonly metrics: NonNullable<ReturnType<typeof httpMetrics>>) {}

  /** The recorder, or null when the broker has no metrics (then nothing is added per request). */
  static of(broker: ServiceBroker): HttpMetrics | null {
    const metrics = httpMetrics(broker);
    return metrics ? new HttpMetrics(metrics) : null;
  }

  /** Counts `req` once its connection is done with it; `specOf` is read then (routes resolve late). */
  track(
    req: RoutedRequest,
    res: ServerResponse,
    specOf: (req: RoutedRequest) => RouteSpec | undefined,
  ): void {
    const started = process.hrtime.bigint();
    res.once("close", () => {
      const route = routeLabel(req, specOf(req));
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      this.metrics.requests.increment({ route, status: statusLabel(res) });
      this.metrics.duration.observe(seconds, { route });
    });
  }
}
