/**
 * Every override of moleculer-web's own methods, in one place. moleculer-web documents its settings,
 * route hooks (`authenticate`, `authorize`, `onError`, ...) and `server: false` with `express()`, which
 * the gateway uses; the methods below are not documented, so each override is an internals hook
 * (shared/runtime/internals): written for moleculer-web 0.10, applied to the gateway's own service
 * instance at its creation only when the installed release is in range and has what the override
 * wraps, and otherwise left off with one warning, moleculer-web then answering its own (correct,
 * slower) way. Each wraps the method it overrides and calls it for everything it does not handle
 * itself. What each gains: docs/decisions/0103-internals-hooks-guard.md.
 *
 * - `gateway-fast-answers`: `callAction` answers a microcached read from the gateway's cache and asks
 *   the action for its answer as JSON bytes (RawJson); `sendResponse` writes such bytes as they are;
 *   `encodeResponse` gives every JSON answer its Content-Length (no chunked framing) and keeps a
 *   microcached read's answer. Off: every read is called through and stringified by moleculer-web.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import ApiGateway from "moleculer-web";
import type { Context } from "moleculer";
import type { AuthMeta, FreshnessMeta } from "../../shared/contracts/common";
import { RawJson, type RawJsonMeta } from "../../shared/runtime/raw-json";
import {
  missingFunctions,
  unwrap,
  useHook,
  wrap,
  type HookSettings,
  type InternalsHook,
} from "../../shared/runtime/internals";
import { keepAnswer, keptAnswer, microcacheSlot, type MicrocacheSlot } from "./microcache";
import type { ResponseCache } from "./response-cache";
import type { RouteSpec } from "./routes";
import { writeJson } from "./write-json";

type Req = IncomingMessage & { $ctx?: Context; $microcache?: MicrocacheSlot };
type Res = ServerResponse;
/** What moleculer-web's answer writer reads of the action called. */
type ActionLike = { responseType?: unknown; responseHeaders?: unknown };

/** The gateway service as the overrides see it: moleculer-web's methods and what the overrides read. */
export interface WebGateway {
  callAction: (
    route: unknown,
    action: string,
    req: Req,
    res: Res,
    params: Record<string, unknown>,
  ) => unknown;
  sendResponse: (req: Req, res: Res, data: unknown, action?: ActionLike) => unknown;
  encodeResponse: (req: Req, res: Res, data: unknown) => unknown;
  responses: ResponseCache;
  /** Whether answers reach this gateway as RawJson intact (no transporter, or the Hybrid serializer). */
  takesRawJson: boolean;
  specOf(req: Req): RouteSpec | undefined;
}

const LIBRARY = "moleculer-web";
const VERSIONS = ">=0.10.8 <0.11.0";
const FAST_ANSWER_METHODS = ["callAction", "sendResponse", "encodeResponse"] as const;

/** moleculer-web's own methods, as its schema exports them. */
const libraryMethods = (ApiGateway as unknown as { methods?: Record<string, unknown> }).methods;

const checkMethods = (target: WebGateway, names: readonly string[]): string[] => [
  ...missingFunctions(libraryMethods, "ApiGateway.methods", names),
  ...missingFunctions(target, "the gateway service", names),
];

/**
 * Whether moleculer-web's answer writer would do no more than write the JSON: a GET's 200 (a HEAD has no
 * body) for which neither the action nor its call asks for a status, headers or a type of their own.
 */
function plainJsonAnswer(req: Req, res: Res, action: ActionLike | undefined): boolean {
  const meta = (req.$ctx?.meta ?? {}) as Record<string, unknown>;
  return (
    !res.headersSent &&
    res.statusCode === 200 &&
    req.method === "GET" &&
    !action?.responseType &&
    !action?.responseHeaders &&
    meta.$statusCode === undefined &&
    meta.$statusMessage === undefined &&
    meta.$responseType === undefined &&
    meta.$responseHeaders === undefined &&
    meta.$location === undefined
  );
}

const freshness = (req: Req) => req.$ctx?.meta as FreshnessMeta | undefined;

export const fastAnswersHook: InternalsHook<WebGateway> = {
  name: "gateway-fast-answers",
  library: LIBRARY,
  versions: VERSIONS,
  check: (target) => checkMethods(target, FAST_ANSWER_METHODS),
  apply(gw) {
    wrap(
      gw,
      "callAction",
      (original) =>
        function callAction(route, actionName, req, res, params) {
          const userId = (req.$ctx?.meta as AuthMeta | undefined)?.user?.id;
          const slot = microcacheSlot(gw.responses, gw.specOf(req), userId, params);
          if (slot) {
            const kept = keptAnswer(gw.responses, slot, Date.now());
            if (kept !== null) {
              writeJson(res, 200, kept.json, undefined, kept.bytes);
              return true;
            }
            req.$microcache = slot;
          }
          if (gw.takesRawJson && req.$ctx) (req.$ctx.meta as RawJsonMeta).$rawJson = actionName;
          return original(route, actionName, req, res, params);
        },
    );
    wrap(
      gw,
      "sendResponse",
      (original) =>
        function sendResponse(req, res, data, action) {
          if (data instanceof RawJson && plainJsonAnswer(req, res, action)) {
            keepAnswer(gw.responses, req.$microcache, freshness(req), res, data.parts);
            writeJson(res, 200, data.parts);
            return undefined;
          }
          return original(req, res, data, action);
        },
    );
    wrap(
      gw,
      "encodeResponse",
      (original) =>
        function encodeResponse(req, res, data) {
          const json = data instanceof RawJson ? data.bytes : (original(req, res, data) as string | Buffer);
          res.setHeader("Content-Length", Buffer.byteLength(json));
          keepAnswer(gw.responses, req.$microcache, freshness(req), res, json);
          return json;
        },
    );
  },
  remove(gw) {
    for (const name of FAST_ANSWER_METHODS) unwrap(gw, name);
  },
};

/** Applies every override that may be applied to this gateway instance (see the module comment). */
export function overrideMoleculerWeb(gateway: WebGateway, settings: HookSettings): void {
  useHook(fastAnswersHook, gateway, settings);
}
