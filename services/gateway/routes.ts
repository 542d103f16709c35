/**
 * The HTTP routes of the spec, each mapped to one action (moleculer-web, mapping policy restrict). The
 * table also says how each route authenticates and what its body is, so the gateway's hooks and error
 * mapping need no per-route code.
 */
export type AuthScheme = "bearer" | "apiKey" | "none";
export type BodyKind = "none" | "json-object" | "json-object-or-null" | "multipart";

export interface RouteSpec {
  method: "GET" | "POST";
  path: string;
  action: string;
  auth: AuthScheme;
  apiKeyScope?: "app" | "notifications";
  body: BodyKind;
  /** Query parameters handed to the action. */
  query?: string[];
  /** The access token's expiry is not checked (refreshing is what a client does when it expired). */
  acceptExpiredToken?: boolean;
  /** Request headers handed to the action: header name (lower case) → parameter name. */
  headers?: Record<string, string>;
}

export const routes: RouteSpec[] = [
  {
    method: "POST",
    path: "/rounds/:round_id/join",
    action: "rounds.join",
    auth: "bearer",
    body: "json-object-or-null",
  },
  { method: "GET", path: "/rounds/:round_id", action: "rounds.get", auth: "bearer", body: "none" },
  {
    method: "POST",
    path: "/auth/refresh-token",
    action: "auth.refresh",
    auth: "bearer",
    body: "json-object",
    acceptExpiredToken: true,
  },
  {
    method: "POST",
    path: "/stores/:store_id/events",
    action: "stores.createEvent",
    auth: "bearer",
    body: "multipart",
  },
  { method: "GET", path: "/users/friends", action: "users.friends", auth: "bearer", body: "none" },
  { method: "GET", path: "/users/payments", action: "users.payments", auth: "bearer", body: "none" },
  {
    method: "GET",
    path: "/app-settings",
    action: "settings.appSettings",
    auth: "apiKey",
    apiKeyScope: "app",
    body: "none",
    query: ["version", "platform"],
  },
  {
    method: "POST",
    path: "/notifications/send-multicast",
    action: "notifier.sendMulticast",
    auth: "apiKey",
    apiKeyScope: "notifications",
    body: "json-object",
    headers: { "idempotency-key": "idempotency_key" },
  },
];

/** Outside the spec: the state of a multicast job. */
routes.push({
  method: "GET",
  path: "/notifications/:job_id",
  action: "notifier.job",
  auth: "apiKey",
  apiKeyScope: "notifications",
  body: "none",
});

/** Outside the spec: uploaded pictures, at the URLs store events report as cover_picture_url. */
routes.push({ method: "GET", path: "/media/:name", action: "stores.media", auth: "none", body: "none" });

export const routeByAction = new Map(routes.map((r) => [r.action, r]));

export const pathParamsOf = (spec: RouteSpec): string[] =>
  [...spec.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]);

/** Where a top-level parameter of the action came from, for the `loc` of a 422. */
export function originOf(
  spec: RouteSpec | undefined,
  param: string | number | undefined,
): "path" | "query" | "header" | "body" {
  if (spec && typeof param === "string") {
    if (pathParamsOf(spec).includes(param)) return "path";
    if (spec.query?.includes(param)) return "query";
    if (spec.headers && Object.values(spec.headers).includes(param)) return "header";
  }
  return "body";
}
