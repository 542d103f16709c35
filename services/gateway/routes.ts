/**
 * The HTTP routes of the spec, each mapped to one action (moleculer-web, mapping policy restrict). The
 * table also says how each route authenticates, what its body is, and what it answers: the gateway's
 * hooks, its error mapping and the API document (openapi.ts) all read it, so no route has code of its own.
 */
import { Type, type TSchema } from "@sinclair/typebox";
import { RefreshParams, TokenSet } from "../../shared/contracts/auth";
import {
  JobParams,
  MulticastAccepted,
  NotificationJob,
  SendMulticastParams,
} from "../../shared/contracts/notifier";
import { Round } from "../../shared/contracts/round";
import { GetRoundParams, JoinRoundParams } from "../../shared/contracts/rounds";
import { AppSettingsParams, AppSettingsResult } from "../../shared/contracts/settings";
import {
  EventIdempotencyKey,
  MediaParams,
  REPLAYED_HEADER,
  StoreEvent,
  StoreEventForm,
  StoreIdParam,
} from "../../shared/contracts/stores";
import { FriendList, PaymentList } from "../../shared/contracts/users";

/**
 * The largest JSON body of a route without a bound of its own: 8 MiB, which a multicast to the default
 * MULTICAST_MAX_RECIPIENTS (100,000 ids at 80 bytes each) fits; every other JSON route has a small bound.
 */
export const JSON_BODY_LIMIT_BYTES = 8 * 1024 * 1024;

export type AuthScheme = "bearer" | "apiKey" | "none";
export type BodyKind = "none" | "json-object" | "json-object-or-null" | "multipart";

export interface RouteDoc {
  summary: string;
  /** What the operation does, for client developers (the API document's operation description). */
  description: string;
  tag: string;
  /** The action's own params schema: path, query, header and body parts are cut from it. */
  params?: TSchema;
  /** A multipart form, documented field by field. */
  form?: TSchema;
  success: { status: 200 | 202; schema?: TSchema; contentType?: string };
  errors: number[];
  /** Response headers worth documenting, by status: header name → what it says. */
  responseHeaders?: Record<number, Record<string, string>>;
}

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
  /**
   * The gateway may keep this read's answer per caller for a moment (services/gateway/response-cache):
   * the parameter whose value tags the entry, so events about that thing drop it; `CALLER_TAG` tags it
   * with the caller (a list of the caller's own).
   */
  microcacheTag?: string;
  /**
   * The body's `user_ids` may be longer than one packet takes: sent ahead in pages, and the body may be
   * larger than JSON_BODY_LIMIT_BYTES (services/gateway/recipient-pages.ts).
   */
  recipientPages?: boolean;
  /**
   * The largest JSON body this route reads (413 above, before a byte of it is parsed); without it,
   * JSON_BODY_LIMIT_BYTES, or a multicast's own bound (`recipientPages`).
   */
  bodyLimitBytes?: number;
  /** The answer is a token set (RFC 6749 §5.1: `Pragma: no-cache` besides `Cache-Control: no-store`). */
  answersTokens?: boolean;
  doc: RouteDoc;
}

/**
 * The bound of the small bodies (a join, a refresh). The largest honest join body is 100 attributes
 * (the contract's maxItems) of the longest integers, pretty-printed: under 3 KiB (decision 0037).
 */
export const SMALL_BODY_BYTES = 16 * 1024;

/** `microcacheTag` of a read about the caller alone (their friends, their payments). */
export const CALLER_TAG = "#caller";

/** The microcache tag of a caller's own lists: apart from round ids, which are tags too. */
export const callerTag = (userId: string): string => `user:${userId}`;

export const routes: RouteSpec[] = [
  {
    method: "POST",
    path: "/rounds/:round_id/join",
    action: "rounds.join",
    auth: "bearer",
    body: "json-object-or-null",
    bodyLimitBytes: SMALL_BODY_BYTES,
    doc: {
      summary: "Join round",
      description:
        "Adds the caller to the round's members when it is active, not ended, has a free seat and the caller meets its attributes; a paid round records one payment. Answers the round as the caller now sees it.",
      tag: "rounds",
      params: JoinRoundParams,
      success: { status: 200, schema: Round },
      errors: [401, 404, 409, 422],
    },
  },
  {
    method: "GET",
    path: "/rounds/:round_id",
    action: "rounds.get",
    auth: "bearer",
    body: "none",
    microcacheTag: "round_id",
    doc: {
      summary: "Get single round",
      description:
        "The round with its owner, members, item and store, as the caller may see it: a private round only for the owner's friends, the meeting link only for the owner, members and the store's managers.",
      tag: "rounds",
      params: GetRoundParams,
      success: { status: 200, schema: Round },
      errors: [401, 404, 422],
    },
  },
  {
    method: "POST",
    path: "/auth/refresh-token",
    action: "auth.refresh",
    auth: "bearer",
    body: "json-object",
    acceptExpiredToken: true,
    bodyLimitBytes: SMALL_BODY_BYTES,
    answersTokens: true,
    doc: {
      summary: "Refresh token",
      description:
        "Rotates the refresh token: answers a new access token and refresh token. A refresh token used twice outside the grace window revokes its whole family. The access token may have expired.",
      tag: "auth",
      params: RefreshParams,
      success: { status: 200, schema: TokenSet },
      errors: [401, 422],
    },
  },
  {
    method: "POST",
    path: "/stores/:store_id/events",
    action: "stores.createEvent",
    auth: "bearer",
    body: "multipart",
    // Taken before the body is read (services/gateway.service.ts readUpload; docs/decisions/0023).
    headers: { "idempotency-key": "idempotency_key" },
    doc: {
      summary: "Create store event",
      description:
        "A multipart form with the event's fields and its main picture, streamed as it arrives; the event opens a joinable round. With an Idempotency-Key a retry answers the first result.",
      tag: "stores",
      params: Type.Object({
        store_id: StoreIdParam,
        idempotency_key: Type.Optional(EventIdempotencyKey),
      }),
      form: StoreEventForm,
      success: { status: 200, schema: StoreEvent },
      errors: [400, 401, 403, 404, 409, 413, 415, 422],
      responseHeaders: {
        200: {
          [REPLAYED_HEADER]:
            "true when this answer is the one an earlier request with the same Idempotency-Key got (nothing new was made)",
        },
        409: {
          "Retry-After": "Seconds to wait: a request with the same Idempotency-Key is still in progress",
        },
      },
    },
  },
  {
    method: "GET",
    path: "/users/friends",
    action: "users.friends",
    auth: "bearer",
    body: "none",
    microcacheTag: CALLER_TAG,
    doc: {
      summary: "Get user friends",
      description: "The caller's friends with their profiles.",
      tag: "users",
      success: { status: 200, schema: FriendList },
      errors: [401],
    },
  },
  {
    method: "GET",
    path: "/users/payments",
    action: "users.payments",
    auth: "bearer",
    body: "none",
    microcacheTag: CALLER_TAG,
    doc: {
      summary: "Get user payments",
      description: "The caller's payments, newest first: one per paid round joined.",
      tag: "users",
      success: { status: 200, schema: PaymentList },
      errors: [401],
    },
  },
  {
    method: "GET",
    path: "/app-settings",
    action: "settings.appSettings",
    auth: "apiKey",
    apiKeyScope: "app",
    body: "none",
    query: ["version", "platform"],
    doc: {
      summary: "Get app settings",
      description: "The settings an app version on a platform needs (API key with the app scope).",
      tag: "settings",
      params: AppSettingsParams,
      success: { status: 200, schema: AppSettingsResult },
      errors: [401, 403, 404, 422],
    },
  },
  {
    method: "POST",
    path: "/notifications/send-multicast",
    action: "notifier.sendMulticast",
    auth: "apiKey",
    apiKeyScope: "notifications",
    body: "json-object",
    headers: { "idempotency-key": "idempotency_key" },
    recipientPages: true,
    doc: {
      summary: "Send multicast push notifications",
      description:
        "Accepts a push to the devices of the listed users and answers the job's id at once (202); delivery goes on in the background. API key with the notifications scope; an Idempotency-Key makes a retry answer the same job.",
      tag: "notifications",
      params: SendMulticastParams,
      success: { status: 202, schema: MulticastAccepted },
      errors: [401, 403, 409, 413, 422],
    },
  },
  // Outside the spec: the state of a multicast job.
  {
    method: "GET",
    path: "/notifications/:job_id",
    action: "notifier.job",
    auth: "apiKey",
    apiKeyScope: "notifications",
    body: "none",
    doc: {
      summary: "Get a multicast job (outside the spec)",
      description: "The state and counts of a multicast job, for the API key that made it.",
      tag: "notifications",
      params: JobParams,
      success: { status: 200, schema: NotificationJob },
      errors: [401, 403, 404, 422],
    },
  },
  // Outside the spec: uploaded pictures, at the URLs store events report as cover_picture_url.
  {
    method: "GET",
    path: "/media/:name",
    action: "stores.media",
    auth: "none",
    body: "none",
    doc: {
      summary: "An uploaded picture (outside the spec)",
      description: "An event's picture, at the URL its store event reports as cover_picture_url.",
      tag: "media",
      params: MediaParams,
      success: { status: 200, contentType: "image/*" },
      errors: [404, 422],
    },
  },
];

export const routeByAction = new Map(routes.map((r) => [r.action, r]));

const pathParams = new Map<string, string[]>();

/** The `:name` parameters of a route's path (read once per path: the gateway asks on every request). */
export function pathParamsOf(spec: Pick<RouteSpec, "path">): string[] {
  let names = pathParams.get(spec.path);
  if (!names) {
    names = [...spec.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]);
    pathParams.set(spec.path, names);
  }
  return names;
}

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

/**
 * Method and path pattern of every upload route (a multipart body), matched before alias resolution and
 * as loosely as moleculer-web matches its aliases: letters in either case, and up to two trailing
 * slashes (it cuts one, then the alias's pattern allows one).
 */
const uploadPatterns = routes
  .filter((r) => r.body === "multipart")
  .map((r) => ({
    method: r.method,
    path: new RegExp(`^${r.path.replace(/:[A-Za-z_]+/g, "[^/?#]+")}/{0,2}(?:[?#]|$)`, "i"),
  }));

/** Whether a request is for an upload route: it gets the upload's time bounds (see the gateway). */
export function isUploadRequest(method: string | undefined, url: string | undefined): boolean {
  return uploadPatterns.some((p) => p.method === method && p.path.test(url ?? ""));
}
