/**
 * An action's parameters from the parts of an HTTP request the route table names: path parameters,
 * declared query parameters and headers (the body is read separately, after authentication).
 */
import type { IncomingMessage } from "node:http";
import { pathParamsOf, type RouteSpec } from "./routes";

export interface ParsedRequest extends IncomingMessage {
  /** Path parameters as moleculer-web matched them. */
  $params: Record<string, unknown>;
  query?: Record<string, unknown>;
}

export function paramsOfRequest(spec: RouteSpec, req: ParsedRequest) {
  const pathNames = pathParamsOf(spec);
  const path = Object.fromEntries(Object.entries(req.$params).filter(([k]) => pathNames.includes(k)));
  const headers = Object.fromEntries(
    Object.entries(spec.headers ?? {})
      .filter(([h]) => typeof req.headers[h] === "string")
      .map(([h, param]) => [param, req.headers[h]]),
  );
  const query = Object.fromEntries(
    (spec.query ?? []).filter((q) => req.query?.[q] !== undefined).map((q) => [q, req.query?.[q]]),
  );
  return { path, headers, query };
}

/** Who a rate limit counts a request against: the user, else the API key, else the client address. */
export function rateLimitCaller(
  meta: { user?: { id: string } | null; apiKey?: { key_id: string } },
  clientAddress: string,
): string {
  if (meta.user) return `user:${meta.user.id}`;
  if (meta.apiKey) return `key:${meta.apiKey.key_id}`;
  return `ip:${clientAddress}`;
}
