/**
 * A caller's trace context (decision 0143): the ingress, a proxy or a client that already traces the
 * request says which trace it belongs to, which of its spans called the gateway, and whether the trace
 * is sampled. Read, in this order, from W3C Trace Context (`traceparent`), B3 single (`b3`) and B3 multi
 * (`X-B3-TraceId`, `X-B3-SpanId`, `X-B3-Sampled`, `X-B3-Flags`). A header that does not parse is ignored
 * (the request starts a trace of its own), never an error. `tracestate` and baggage are not carried.
 *
 * `traceparent` is read by OpenTelemetry's W3CTraceContextPropagator (shared/tracing/w3c.ts). B3 is
 * read here: OpenTelemetry's B3 propagator takes an absent sampling state for "not sampled" where B3
 * says "deferred", and accepts a b3 header with anything after a valid start (decision 0143).
 */
import type { IncomingHttpHeaders } from "node:http";
import { readTraceparent } from "../../shared/tracing/w3c";

export interface IncomingTrace {
  /** 32 (or, from B3, 16) lower-case hex digits, never all zeros. */
  traceId: string;
  /** The caller's span: 16 lower-case hex digits, never all zeros. */
  spanId: string;
  /** The caller's decision; undefined when it deferred it (B3 without a sampling state). */
  sampled: boolean | undefined;
}

const HEX16_OR_32 = /^(?:[0-9a-f]{16}|[0-9a-f]{32})$/;
const HEX16 = /^[0-9a-f]{16}$/;
const ZEROS = /^0+$/;
/** Longest header read: a traceparent is 55 characters, a b3 with its parent 84. */
const MAX_HEADER = 256;

const one = (value: string | string[] | undefined): string | undefined =>
  typeof value === "string" && value.length <= MAX_HEADER ? value.trim() : undefined;

const validIds = (traceId: string, spanId: string): boolean =>
  HEX16_OR_32.test(traceId) && HEX16.test(spanId) && !ZEROS.test(traceId) && !ZEROS.test(spanId);

/** W3C Trace Context level 1 (https://www.w3.org/TR/trace-context/#traceparent-header). */
export function parseTraceparent(value: string | undefined): IncomingTrace | undefined {
  return value === undefined ? undefined : readTraceparent(value);
}

/** A B3 sampling state: "1"/"d" (debug) yes, "0" no, absent deferred; anything else is no B3 at all. */
function b3Sampled(state: string | undefined, flags?: string): boolean | undefined | null {
  if (flags === "1") return true;
  if (state === undefined || state === "") return undefined;
  if (state === "1" || state === "d" || state === "true") return true;
  if (state === "0" || state === "false") return false;
  return null;
}

/** B3 single (https://github.com/openzipkin/b3-propagation#single-header): `{trace}-{span}[-{state}[-{parent}]]`. */
export function parseB3Single(value: string | undefined): IncomingTrace | undefined {
  if (value === undefined) return undefined;
  const parts = value.toLowerCase().split("-");
  // "0", "1" or "d" alone carries a decision but no trace to continue: a trace of our own.
  if (parts.length < 2 || parts.length > 4) return undefined;
  const [traceId, spanId, state, parent] = parts;
  if (!validIds(traceId, spanId)) return undefined;
  if (parent !== undefined && !HEX16.test(parent)) return undefined;
  const sampled = b3Sampled(state);
  if (sampled === null || (parts.length >= 3 && sampled === undefined)) return undefined;
  return { traceId, spanId, sampled };
}

/** B3 multi (https://github.com/openzipkin/b3-propagation#multiple-headers). */
export function parseB3Multi(headers: IncomingHttpHeaders): IncomingTrace | undefined {
  const traceId = one(headers["x-b3-traceid"])?.toLowerCase();
  const spanId = one(headers["x-b3-spanid"])?.toLowerCase();
  if (traceId === undefined || spanId === undefined || !validIds(traceId, spanId)) return undefined;
  const sampled = b3Sampled(one(headers["x-b3-sampled"])?.toLowerCase(), one(headers["x-b3-flags"]));
  if (sampled === null) return undefined;
  return { traceId, spanId, sampled };
}

/** The caller's trace context, from the first of traceparent, b3 and X-B3-* that parses; else none. */
export function incomingTrace(headers: IncomingHttpHeaders): IncomingTrace | undefined {
  return (
    parseTraceparent(one(headers.traceparent)) ?? parseB3Single(one(headers.b3)) ?? parseB3Multi(headers)
  );
}
