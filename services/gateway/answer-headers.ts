/**
 * Headers every answer, or every answer of a route, carries (decision 0037), as constants set on the
 * response once per request (moleculer-web sets X-Request-ID on every routed response already, so the
 * response's own header table is in use either way; a set costs a validation and a store):
 * - `X-Content-Type-Options: nosniff` on every answer, so a browser never takes an answer for a type
 *   other than its Content-Type says (an uploaded picture for HTML, a JSON error for script);
 * - `Cache-Control: no-store` on every answer of an authenticated route (bearer or API key), errors
 *   and 401s included: answers for one caller (friends, payments, a private round, a token set, the
 *   app's settings for its key) are kept by no cache on the way, nor by the client's disk;
 * - `Pragma: no-cache` besides, on the token set (RFC 6749 §5.1, for HTTP/1.0 caches).
 * Media (`/media/{name}`, no authentication) keep their long public cache.
 */
import type { ServerResponse } from "node:http";
import { routes, type RouteSpec } from "./routes";

export const NOSNIFF: readonly [string, string] = ["X-Content-Type-Options", "nosniff"];

const NO_STORE: readonly (readonly [string, string])[] = [["Cache-Control", "no-store"]];
const TOKEN_SET: readonly (readonly [string, string])[] = [...NO_STORE, ["Pragma", "no-cache"]];
const NONE: readonly (readonly [string, string])[] = [];

/** The headers of a route's every answer, besides NOSNIFF. */
export function routeAnswerHeaders(spec: RouteSpec): readonly (readonly [string, string])[] {
  if (spec.answersTokens) return TOKEN_SET;
  return spec.auth === "none" ? NONE : NO_STORE;
}

const byAction = new Map(routes.map((r) => [r.action, routeAnswerHeaders(r)]));

/** Sets the route's answer headers on `res` (nothing once its headers are out). */
export function setRouteAnswerHeaders(res: ServerResponse, spec: RouteSpec): void {
  if (res.headersSent) return;
  for (const [name, value] of byAction.get(spec.action) ?? routeAnswerHeaders(spec))
    res.setHeader(name, value);
}
