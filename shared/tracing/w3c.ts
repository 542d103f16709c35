/**
 * W3C Trace Context's `traceparent`, read and written by OpenTelemetry's W3CTraceContextPropagator.
 * Its packages are required at the first use: a process without tracing never reads or writes a
 * traceparent, and loads no OpenTelemetry package (decision 0060: a process loads only what it uses).
 */
import type * as Api from "@opentelemetry/api";
import type * as Core from "@opentelemetry/core";

let loaded: { api: typeof Api; propagator: Core.W3CTraceContextPropagator } | null = null;

function otel() {
  if (!loaded) {
    /* eslint-disable @typescript-eslint/no-require-imports */
    const api = require("@opentelemetry/api") as typeof Api;
    const core = require("@opentelemetry/core") as typeof Core;
    /* eslint-enable @typescript-eslint/no-require-imports */
    loaded = { api, propagator: new core.W3CTraceContextPropagator() };
  }
  return loaded;
}

export interface W3CSpanContext {
  /** 32 lower-case hex digits, not all zeros. */
  traceId: string;
  /** 16 lower-case hex digits, not all zeros. */
  spanId: string;
  sampled: boolean;
}

/** The span context a `traceparent` names, or undefined when it is not a valid one. */
export function readTraceparent(value: string): W3CSpanContext | undefined {
  const { api, propagator } = otel();
  const context = propagator.extract(api.ROOT_CONTEXT, { traceparent: value }, api.defaultTextMapGetter);
  const span = api.trace.getSpanContext(context);
  if (!span) return undefined;
  const sampled = (span.traceFlags & api.TraceFlags.SAMPLED) === api.TraceFlags.SAMPLED;
  return { traceId: span.traceId, spanId: span.spanId, sampled };
}

/** The `traceparent` (version 00) of a sampled span, ids as W3C wants them. */
export function writeTraceparent(traceId: string, spanId: string): string | undefined {
  const { api, propagator } = otel();
  const carrier: Record<string, string> = {};
  const span = { traceId, spanId, traceFlags: api.TraceFlags.SAMPLED };
  propagator.inject(api.trace.setSpanContext(api.ROOT_CONTEXT, span), carrier, api.defaultTextMapSetter);
  return carrier.traceparent;
}
