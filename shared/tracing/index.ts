/**
 * Tracing (off unless TRACING_ENDPOINT is set): Moleculer's tracer makes a span of every action call and
 * event handler, the gateway one per HTTP request (its root), fact consumers one per fact handled
 * (propagation.ts); BoundedZipkinExporter sends them as Zipkin v2 JSON, or, to an endpoint whose path ends
 * in OTLP's `/v1/traces`, OtlpSpanExporter over OTLP/HTTP. The trace id is the request id, which the gateway takes from a
 * caller's trace context (`traceparent`, B3) when one comes. The caller's sampled flag, else
 * TRACING_SAMPLE_RATE, decides which requests are traced (sampling.ts).
 */
import type { BrokerOptions } from "moleculer";
import type { Config } from "../config";
import { BoundedZipkinExporter } from "./zipkin-exporter";
import type { OtlpSpanExporter } from "./otlp-exporter";

export { BoundedZipkinExporter, type ZipkinSpan } from "./zipkin-exporter";
export { traceparentOf, w3cTraceId, zipkinSpanId, zipkinTraceId } from "./ids";
export { KEPT_FOR_ERROR, sampleRequest } from "./sampling";
export {
  deliveredTrace,
  startFactSpan,
  traceContextOf,
  traceHeaders,
  type TraceContext,
} from "./propagation";

export function tracingOptions(config: Config): BrokerOptions["tracing"] {
  if (!config.tracingEndpoint) return { enabled: false };
  return {
    enabled: true,
    actions: true,
    events: true,
    // Spans with a parent follow its decision; this rate decides only for spans that start a trace
    // without a request (the gateway decides for requests itself: sampling.ts).
    sampling: { rate: config.tracingSampleRate },
    // Never a call's params, meta or response as tags: they carry tokens, API keys, passwords and
    // personal data. Spans name the action, the nodes and the outcome; the gateway's root span adds the
    // route, the status and the kind of caller.
    tags: {
      action: { params: false, meta: false, response: false },
      event: { params: false, meta: false },
    },
    // An error's data may echo what was sent (a 422 lists the bad inputs): never exported. (The exporter
    // tags name, code, type and the message, which the client sees anyway; these are for other exporters.)
    errorFields: ["name", "code", "type"],
    // Moleculer takes exporter instances; its typings only name the built-in ones.
    exporter: [exporterOf(config) as never],
  };
}

/**
 * How often finished spans are sent: often enough that a trace is at the collector while someone still
 * looks at the request (seconds), rarely enough that a busy process sends a few large batches, not a
 * request per span. A test that wants what is finished now calls the exporter's `flush()`.
 */
export const TRACING_INTERVAL_MS = 5000;

/**
 * Most finished spans one process holds for the collector: two intervals at 1,000 spans a second, some
 * 10 MB; past it spans are dropped and counted, so a collector that is down
 * costs a bounded amount of memory, never a request (decision 0063).
 */
export const TRACING_QUEUE_SIZE = 10_000;

/**
 * What TRACING_ENDPOINT speaks, told by its path: OTLP/HTTP's traces path is `/v1/traces` (the
 * OpenTelemetry specification's default, which collectors serve), Zipkin v2's `/api/v2/spans`; any other
 * path is taken for Zipkin, the exporter this system shipped first.
 */
export const tracingFormatOf = (endpoint: string): "otlp" | "zipkin" =>
  /\/v1\/traces\/?$/.test(new URL(endpoint).pathname) ? "otlp" : "zipkin";

/** The span exporter TRACING_ENDPOINT's path names, bounded either way (decisions 0063, 0143). */
function exporterOf(config: Config): BoundedZipkinExporter | OtlpSpanExporter {
  const options = {
    endpoint: config.tracingEndpoint,
    intervalMs: TRACING_INTERVAL_MS,
    maxQueue: TRACING_QUEUE_SIZE,
  };
  if (tracingFormatOf(config.tracingEndpoint) !== "otlp") return new BoundedZipkinExporter(options);
  // Required only when chosen, so that a process not sending OTLP never loads OpenTelemetry's packages
  // (a process loads only what it uses: docs/decisions/0060-node-24-production.md).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const otlp = require("./otlp-exporter") as typeof import("./otlp-exporter");
  return new otlp.OtlpSpanExporter(options);
}
