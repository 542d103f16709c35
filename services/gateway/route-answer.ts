/**
 * How a route of the spec is answered: moleculer-web's documented custom alias handler (a function in
 * `aliases`), which it runs after `authenticate` and `authorize`, calls the route's action and writes
 * what it answers. Writing the answer here, rather than through moleculer-web's own answer writer, is
 * what lets a read be answered from the gateway's microcache without a call, and an answer already
 * encoded by its service (RawJson) be written as its bytes, with a Content-Length, never parsed or
 * stringified again on the way out.
 *
 * An answer is one of: RawJson (the bytes, in parts), a stream (a picture, or a list too large for one
 * packet: shared/runtime/list-answer), or a value (written as JSON). The action may set the status
 * (`$statusCode`), headers (`$responseHeaders`) and a stream's type (`$responseType`) in its meta.
 */
import { pipeline, Readable } from "node:stream";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Context } from "moleculer";
import type { AuthMeta, FreshnessMeta } from "../../shared/contracts/common";
import { RawJson, type RawJsonMeta } from "../../shared/runtime/raw-json";
import { keepAnswer, keptAnswer, microcacheSlot, type MicrocacheSlot } from "./microcache";
import type { ResponseCache } from "./response-cache";
import type { RouteSpec } from "./routes";
import { writeJson } from "./write-json";

/** What an action may say of its answer, in the meta of its call. */
export interface AnswerMeta extends AuthMeta, FreshnessMeta, RawJsonMeta {
  $statusCode?: number;
  $responseType?: string;
  $responseHeaders?: Record<string, string>;
}

export type RoutedRequest = IncomingMessage & {
  $ctx?: Context<unknown, AnswerMeta>;
  $params: Record<string, unknown>;
  $alias?: { handler?: unknown };
};

export interface RouteAnswerDeps {
  responses: ResponseCache;
  /** Whether answers reach this gateway as RawJson intact (no transporter, or the Hybrid serializer). */
  takesRawJson: boolean;
  /** Answers an error in the spec's shape (the gateway's `onError`). */
  answerError(req: RoutedRequest, res: ServerResponse, err: unknown): void;
}

/** An alias handler: moleculer-web calls it with the gateway service as `this`. */
type AliasHandler = (this: RouteAnswerDeps, req: RoutedRequest, res: ServerResponse) => void;

/** The route each alias handler answers, for whoever has the request (`req.$alias.handler`). */
const routeOfHandler = new WeakMap<object, RouteSpec>();

/** The route of the spec that took `req`, if one did. */
export function routeOfRequest(req: { $alias?: { handler?: unknown } }): RouteSpec | undefined {
  const handler = req.$alias?.handler;
  return typeof handler === "function" ? routeOfHandler.get(handler) : undefined;
}

/** Writes an action's answer (see the module comment); a microcached read's 200 is kept. */
export function writeAnswer(
  res: ServerResponse,
  data: unknown,
  meta: AnswerMeta,
  responses: ResponseCache,
  slot: MicrocacheSlot | undefined,
): void {
  // Already answered: a body cut off (408), or the client gone.
  if (res.headersSent || res.destroyed) {
    if (data instanceof Readable) data.destroy();
    return;
  }
  const status = meta.$statusCode ?? 200;
  const headers = meta.$responseHeaders ?? {};
  if (data instanceof Readable) {
    res.writeHead(status, { "Content-Type": meta.$responseType ?? "application/octet-stream", ...headers });
    // A stream that fails midway cannot be answered otherwise: the connection is closed.
    pipeline(data, res, () => undefined);
    return;
  }
  const json = data instanceof RawJson ? data.parts : JSON.stringify(data ?? null);
  writeJson(res, status, json, headers);
  keepAnswer(responses, slot, meta, res, json);
}

/** The alias handler of `spec`: the kept answer of a microcached read, else the action's. */
export function answerRoute(spec: RouteSpec): AliasHandler {
  const handler: AliasHandler = function (this: RouteAnswerDeps, req, res) {
    const ctx = req.$ctx;
    if (!ctx) return this.answerError(req, res, new TypeError("request without a context"));
    const slot = microcacheSlot(this.responses, spec, ctx.meta.user?.id, req.$params) ?? undefined;
    if (slot) {
      const kept = keptAnswer(this.responses, slot, Date.now());
      if (kept !== null) return writeJson(res, 200, kept);
    }
    if (this.takesRawJson) ctx.meta.$rawJson = spec.action;
    ctx.call(spec.action, req.$params).then(
      (data) => writeAnswer(res, data, ctx.meta, this.responses, slot),
      (err: unknown) => this.answerError(req, res, err),
    );
  };
  routeOfHandler.set(handler, spec);
  return handler;
}
