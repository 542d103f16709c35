/**
 * A trace continued across the outbox: Moleculer carries the trace of a call from node to node itself,
 * but a fact is written to the store by one request and handled later, maybe after a crash, by another
 * process. So the outbox entry records the trace context of the span that recorded it (in the same write
 * as the fact), the relay passes it along as message headers, and the consumer's span continues it.
 * The context carries the request's sampling decision too, so a fact of a request not traced is not
 * traced where it is handled either (sampling.ts).
 */
import type { Context, Service, Span } from "moleculer";

/** Moleculer's ids as they are (not yet Zipkin's): the request id and the recording span's id. */
export interface TraceContext {
  trace_id: string;
  parent_id: string;
  /**
   * Present, and false, only when the request was not sampled: its fact is handled without a span
   * exported. Absent means traced (entries recorded before sampling existed were all traced).
   */
  sampled?: false;
}

/**
 * The context to continue `ctx`'s trace with (its sampling decision included), or none when tracing is
 * off (no span, nothing to do).
 */
export function traceContextOf(ctx: Pick<Context, "span">): TraceContext | undefined {
  const span = ctx.span;
  if (!span) return undefined;
  const trace: TraceContext = { trace_id: span.traceID, parent_id: span.id };
  if (!span.sampled) trace.sampled = false;
  return trace;
}

/**
 * Message headers for a trace context. The names are @moleculer/channels' own for a sender's context
 * (`$tracing` "true" or "false" as it writes them), so its `context: true` mode would continue the same
 * trace with the same decision.
 */
export function traceHeaders(trace: TraceContext): Record<string, string> {
  return {
    $requestID: trace.trace_id,
    $parentID: trace.parent_id,
    $tracing: trace.sampled === false ? "false" : "true",
  };
}

interface HeaderMap {
  get(key: string): string;
}

/**
 * The trace context a delivered fact carries: from a JetStream message's headers, or (embedded, where
 * the relay calls the consumer itself) from `{ trace }`. Facts recorded before there were trace
 * contexts, or with tracing off, carry none.
 */
export function deliveredTrace(raw: unknown): TraceContext | undefined {
  if (raw === null || typeof raw !== "object") return undefined;
  const local = (raw as { trace?: TraceContext }).trace;
  if (local) return local;
  const headers = (raw as { headers?: HeaderMap }).headers;
  if (!headers || typeof headers.get !== "function") return undefined;
  const trace_id = headers.get("$requestID");
  const parent_id = headers.get("$parentID");
  if (!trace_id || !parent_id) return undefined;
  return headers.get("$tracing") === "false"
    ? { trace_id, parent_id, sampled: false }
    : { trace_id, parent_id };
}

/**
 * The span of a fact's handling in a consumer (Moleculer makes none: channel handlers are not actions),
 * a child of the span that recorded the fact when the delivery (`raw`, see deliveredTrace) carries its
 * trace context, and then sampled as that request was; else a trace of its own, sampled at this
 * process's rate. Null, with nothing read, when tracing is off.
 */
export function startFactSpan(
  service: Service,
  channel: { name: string; group?: string },
  raw: unknown,
): Span | null {
  const broker = service.broker;
  if (!broker.isTracingEnabled()) return null;
  const trace = deliveredTrace(raw);
  return broker.tracer.startSpan(`channel '${channel.name}' in '${service.fullName}'`, {
    type: "channel",
    service,
    traceID: trace?.trace_id,
    parentID: trace?.parent_id,
    sampled: trace ? trace.sampled !== false : undefined,
    tags: { channel: { name: channel.name, group: channel.group }, nodeID: broker.nodeID },
  });
}
