/**
 * What every exporter says of a finished Moleculer span, whatever its format (Zipkin v2, OTLP): its
 * tags flattened, the request id and the node, the error's name, type, code and message (never its
 * data), and whether it handled a message nobody waits on (an event, a fact) or a call.
 */
import type { GaugeMetric, ServiceBroker, Span } from "moleculer";

/** Error messages are answers clients see anyway; cut so a long one cannot bloat a span. */
const MAX_MESSAGE = 200;

/** Span types that handle a message nobody waits on (CONSUMER); calls and requests are SERVER. */
const CONSUMED = new Set(["event", "channel"]);

export type SpanKindName = "SERVER" | "CONSUMER";

export const spanKindOf = (span: Span): SpanKindName =>
  CONSUMED.has((span as Span & { type?: string }).type ?? "") ? "CONSUMER" : "SERVER";

type Primitive = string | number | boolean;

/** Nested tags as one flat map ({a: {b: 1}} → {"a.b": 1}); null and undefined are left out. */
function flatten(obj: Record<string, unknown>, into: Record<string, Primitive>, prefix = ""): void {
  for (const key of Object.keys(obj)) {
    const value = obj[key];
    if (value === null || value === undefined) continue;
    const name = prefix ? `${prefix}.${key}` : key;
    if (typeof value === "object" && !Array.isArray(value))
      flatten(value as Record<string, unknown>, into, name);
    else if (typeof value === "number" || typeof value === "boolean") into[name] = value;
    else into[name] = String(value);
  }
}

/**
 * The span's tags, typed as they were set (numbers and booleans stay so: OTLP keeps them, Zipkin's
 * exporter writes every value as a string), plus `request.id` (the request id as the client sent it:
 * the trace id may be its hash, see ids.ts), `node.id`, and for a failed span `error` and `error.*`.
 */
export function spanTags(span: Span, nodeID: string): Record<string, Primitive> {
  const tags: Record<string, Primitive> = {};
  flatten(span.tags, tags);
  tags["request.id"] = span.traceID;
  tags["node.id"] = nodeID;
  const failure = spanError(span);
  if (failure) {
    tags.error = failure.type;
    tags["error.type"] = failure.type;
    if (failure.name !== undefined) tags["error.name"] = failure.name;
    if (failure.code !== undefined) tags["error.code"] = failure.code;
    if (failure.message !== undefined) tags["error.message"] = failure.message;
  }
  return tags;
}

/** A failed span's error as exported: its type (else name, else "Error"), name, code and message, cut. */
export function spanError(
  span: Span,
): { type: string; name?: string; code?: string; message?: string } | undefined {
  if (!span.error) return undefined;
  const e = span.error as { name?: unknown; type?: unknown; code?: unknown; message?: unknown };
  const type = typeof e.type === "string" && e.type ? e.type : typeof e.name === "string" ? e.name : "Error";
  return {
    type,
    name: typeof e.name === "string" ? e.name : undefined,
    code: e.code !== undefined && e.code !== null ? String(e.code) : undefined,
    message: typeof e.message === "string" ? e.message.slice(0, MAX_MESSAGE) : undefined,
  };
}

/** fetch says "fetch failed" and puts the reason (ECONNREFUSED, a timeout) in its cause. */
export function reasonOf(err: unknown): string {
  const e = err as { message?: string; code?: string; cause?: { code?: string; message?: string } };
  const cause = e?.cause?.code ?? e?.cause?.message ?? e?.code;
  const message = String(e?.message ?? err);
  return cause && !message.includes(cause) ? `${message}: ${cause}` : message;
}

/** The URL without credentials (what is logged) and the Authorization header they stand for. */
export function endpointOf(raw: string): { url: string; headers: Record<string, string> } {
  const url = new URL(raw);
  const headers: Record<string, string> = {};
  if (url.username || url.password) {
    const user = decodeURIComponent(url.username);
    const password = decodeURIComponent(url.password);
    headers.Authorization = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
    url.username = "";
    url.password = "";
  }
  return { url: url.toString(), headers };
}

/** An exporter's Prometheus view (with METRICS_PORT): spans waiting, sent, dropped. */
export interface ExporterGauges {
  queued: GaugeMetric;
  exported: GaugeMetric;
  dropped: GaugeMetric;
}

/** `tracing_spans_queued`, `tracing_spans_exported_total`, `tracing_spans_dropped_total`; null without metrics. */
export function exporterGauges(broker: ServiceBroker): ExporterGauges | null {
  if (!broker.isMetricsEnabled()) return null;
  const metric = (type: "gauge" | "counter", name: string, description: string) =>
    broker.metrics.register({ type, name, description, unit: "span" }) as GaugeMetric;
  const gauges = {
    queued: metric("gauge", "tracing.spans.queued", "Finished spans waiting to be sent"),
    exported: metric("counter", "tracing.spans.exported.total", "Spans the collector accepted"),
    dropped: metric("counter", "tracing.spans.dropped.total", "Spans dropped: queue full or batch failed"),
  };
  // Shown from the start (Prometheus leaves out a metric that has no value yet).
  gauges.queued.set(0);
  gauges.exported.increment(undefined, 0);
  gauges.dropped.increment(undefined, 0);
  return gauges;
}
