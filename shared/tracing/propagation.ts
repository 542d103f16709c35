/**
 * A trace continued across the outbox: Moleculer carries the trace of a call from node to node itself,
 * but a fact is written to the store by one request and handled later, maybe after a crash, by another
 * process. So the outbox entry records the trace context of the span that recorded it (in the same write
 * as the fact), the relay passes it along as message headers, and the consumer's span continues it.
 */
import type { Context, Service, Span } from "moleculer";

/** Moleculer's ids as they are (not yet Zipkin's): the request id and the recording span's id. */
export interface TraceContext {
  trace_id: string;
  parent_id: string;
}

/** The context to continue `ctx`'s trace with, or none when tracing is off (no span, nothing to do). */
export function traceContextOf(ctx: Pick<Context, "span">): TraceContext | undefined {
  const span = ctx.span;
  return span && span.sampled ? { trace_id: span.traceID, parent_id: span.id } : undefined;
}

/**
 * Message headers for a trace context. The names are @moleculer/channels' own for a sender's context,
 * so its `context: true` mode would continue the same trace.
 */
export function traceHeaders(trace: TraceContext): Record<string, string> {
  return { $requestID: trace.trace_id, $parentID: trace.parent_id, $tracing: "true" };
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
  return trace_id && parent_id ? { trace_id, parent_id } : undefined;
}

/**
 * The span of a fact's handling in a consumer (Moleculer makes none: channel handlers are not actions),
 * a child of the span that recorded the fact when the delivery (`raw`, see deliveredTrace) carries its
 * trace context, else a trace of its own. Null, with nothing read, when tracing is off.
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
    tags: { channel: { name: channel.name, group: channel.group }, nodeID: broker.nodeID },
  });
}
