/**
 * Moleculer's ids as Zipkin, OTLP and W3C Trace Context want them. Moleculer's trace id is the request
 * id (the trace id of a `traceparent` or B3 header the gateway continued, else the client's
 * `X-Request-ID`, else a UUID the gateway made), its span ids are UUIDs; Zipkin v2 takes trace ids of 16
 * or 32 lower-case hex digits and span ids of 16, OTLP and W3C trace ids of 32. Every process maps the same id the same way, so spans
 * sent by different processes meet in one trace and parent links hold.
 */
import { createHash } from "node:crypto";
import { writeTraceparent } from "./w3c";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const HEX16_OR_32 = /^(?:[0-9a-f]{16}|[0-9a-f]{32})$/i;
const HEX16 = /^[0-9a-f]{16}$/i;
const ZEROS = /^0+$/;

const hashed = (id: string, digits: 16 | 32): string =>
  createHash("sha256").update(id).digest("hex").slice(0, digits);

/**
 * A UUID loses its dashes; 16 or 32 hex digits (a Zipkin or W3C id a client sent) stay as they are,
 * lower-cased; anything else (any string a client may send as X-Request-ID) is hashed to 32 hex digits.
 * All zeros is no valid id and is hashed too.
 */
export function zipkinTraceId(id: string): string {
  let out: string | null = null;
  if (UUID.test(id)) out = id.replace(/-/g, "").toLowerCase();
  else if (HEX16_OR_32.test(id)) out = id.toLowerCase();
  return out !== null && !ZEROS.test(out) ? out : hashed(id, 32);
}

/** A UUID keeps its first 16 hex digits (60 random bits of a v4), 16 hex digits stay, else hashed. */
export function zipkinSpanId(id: string): string {
  let out: string | null = null;
  if (UUID.test(id)) out = id.replace(/-/g, "").slice(0, 16).toLowerCase();
  else if (HEX16.test(id)) out = id.toLowerCase();
  return out !== null && !ZEROS.test(out) ? out : hashed(id, 16);
}

/**
 * The trace id as W3C Trace Context and OTLP want it: always 32 hex digits (a 16-digit Zipkin or B3
 * id is padded on the left with zeros, as OpenTelemetry's B3 propagator does).
 */
export function w3cTraceId(id: string): string {
  return zipkinTraceId(id).padStart(32, "0");
}

/** The W3C `traceparent` header (version 00, sampled) naming a request's trace and one of its spans. */
export function traceparentOf(traceID: string, spanID: string): string {
  // Both ids are valid (never all zeros), so the propagator always writes one.
  return writeTraceparent(w3cTraceId(traceID), zipkinSpanId(spanID)) as string;
}
