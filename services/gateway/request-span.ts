/**
 * The span of one HTTP request: the root of its trace (tracing on only, see shared/tracing). Moleculer's
 * own span of the gateway's `rest` action ends when the action does, before an error's answer is even
 * mapped; this one ends when the answer has gone out (or the connection closed), so it carries the
 * status the client got. Its id is the context's, so the calls the request makes are its children.
 *
 * Its tags: route (the template, never ids or the query), status, the kind of caller (a user or an API
 * key of a scope: never the token or the key) and the error type. A request's credentials never reach a
 * span: Moleculer's action spans are configured without params or meta (shared/tracing).
 *
 * A caller's trace context (`traceparent`, B3: gateway/trace-context) is continued (decision 0143): the
 * request id becomes its trace id, the caller's span is this one's parent, and its sampled flag is the
 * decision. Without one (or when it defers the decision), TRACING_SAMPLE_RATE decides here, when the span
 * starts (shared/tracing/sampling.ts): parent-based, as OpenTelemetry's default sampler. The context
 * carries the decision to every call the request makes; a traced request's answer carries `traceparent`
 * naming this span. A request that was not sampled but is
 * answered 5xx still sends this span (tagged `sampling.kept: 5xx`), alone: a server failure is always
 * visible in the collector, while its calls, which decided "no" long before, send nothing.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Context, Service } from "moleculer";
import type { AuthMeta } from "../../shared/contracts/common";
import { traceparentOf } from "../../shared/tracing/ids";
import { KEPT_FOR_ERROR, sampleRequest } from "../../shared/tracing/sampling";
import type { RouteSpec } from "./routes";
import { incomingTrace } from "./trace-context";

export interface TracedRequest extends IncomingMessage {
  $alias?: { action?: string | null; method?: string; fullPath?: string };
  /** The type of the error answered (set by the gateway's sendError while tracing). */
  $errorType?: string;
  /** The client's own X-Request-ID, when a trace context it also sent made the trace id the request id. */
  $clientRequestID?: string;
}

/** The options of the gateway's root call (moleculer-web's rootCallOptions) this file reads and sets. */
export interface RootCallOptions {
  requestID?: string;
  /** Moleculer's Context.create takes the request id, parent id and sampling decision from it. */
  parentSpan?: { id: string; traceID: string; sampled: boolean | undefined };
}

/**
 * Continues the caller's trace (tracing on only): the request's context gets the caller's trace id as
 * request id, its span as parent and its decision. Without a valid trace context, nothing changes.
 */
export function continueTrace(options: RootCallOptions, req: TracedRequest): void {
  const trace = incomingTrace(req.headers);
  if (!trace) return;
  if (options.requestID !== undefined && options.requestID !== trace.traceId) {
    req.$clientRequestID = options.requestID;
  }
  options.parentSpan = { id: trace.spanId, traceID: trace.traceId, sampled: trace.sampled };
}

export type CallerKind = "user" | "api-key" | "none";

/** Who the request was made as: a user, an API key (with the scope the route asks), or nobody known. */
export function callerOf(meta: AuthMeta & { apiKey?: unknown }, spec: RouteSpec | undefined) {
  if (meta.user) return { kind: "user" as CallerKind };
  if (meta.apiKey) return { kind: "api-key" as CallerKind, scope: spec?.apiKeyScope ?? "app" };
  return { kind: "none" as CallerKind };
}

/** "GET /rounds/:round_id": the route's template, or the method alone when no route matched. */
export function routeOf(req: TracedRequest, spec: RouteSpec | undefined): string {
  if (spec) return `${spec.method} ${spec.path}`;
  const alias = req.$alias;
  if (alias?.fullPath)
    return `${alias.method && alias.method !== "*" ? alias.method : req.method} ${alias.fullPath}`;
  return `${req.method ?? "?"} (no route)`;
}

/** The tags known once the answer is out. */
export function requestSpanTags(
  req: TracedRequest,
  res: ServerResponse,
  meta: AuthMeta & { apiKey?: unknown },
  spec: RouteSpec | undefined,
): Record<string, unknown> {
  const caller = callerOf(meta, spec);
  const tags: Record<string, unknown> = {
    http: {
      method: req.method,
      route: routeOf(req, spec),
      status_code: res.headersSent ? res.statusCode : undefined,
      // The answer never went out in full: the client went away first.
      aborted: res.writableFinished ? undefined : true,
    },
    caller,
  };
  if (req.$errorType) tags.error = { type: req.$errorType };
  return tags;
}

/**
 * Starts the request's span on the `rest` action's context and finishes it when the response closes.
 * `spec` is read at that point: the route is only resolved inside the action. `sampleRate` is
 * TRACING_SAMPLE_RATE, for a request whose caller did not decide (continueTrace).
 */
export function traceRequest(
  service: Service,
  ctx: Context<{ req: TracedRequest; res: ServerResponse }>,
  specOf: (req: TracedRequest) => RouteSpec | undefined,
  sampleRate: number,
): void {
  const { req, res } = ctx.params;
  const span = ctx.startSpan(`${req.method ?? "?"} request`, {
    id: ctx.id,
    type: "http",
    traceID: ctx.requestID,
    parentID: ctx.parentID,
    service,
    sampled: ctx.tracing ?? sampleRequest(sampleRate),
    tags: req.$clientRequestID
      ? { nodeID: service.broker.nodeID, request: { client_id: req.$clientRequestID } }
      : { nodeID: service.broker.nodeID },
  });
  ctx.tracing = span.sampled;
  if (span.sampled && !res.headersSent) res.setHeader("traceparent", traceparentOf(span.traceID, span.id));
  res.once("close", () => {
    const spec = specOf(req);
    span.name = routeOf(req, spec);
    span.addTags(requestSpanTags(req, res, ctx.meta as AuthMeta, spec));
    // A server-side failure marks the span failed (Zipkin's `error` tag); a 4xx is an answer, not a fault.
    if (res.headersSent && res.statusCode >= 500) {
      const type = req.$errorType ?? "INTERNAL";
      span.setError({
        name: "HttpError",
        type,
        code: res.statusCode,
        message: `${res.statusCode} ${type}`,
      } as never);
      // Moleculer hands a finished span to the exporters when it is sampled at that moment.
      if (!span.sampled) {
        span.sampled = true;
        span.addTags(KEPT_FOR_ERROR);
      }
    }
    ctx.finishSpan(span);
  });
}
