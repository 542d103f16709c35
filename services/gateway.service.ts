/**
 * gateway: the HTTP face of the system, on moleculer-web. Holds no domain logic: it owns the HTTP server
 * and its time bounds (gateway/http-bounds), authenticates, reads the request into action parameters
 * (the JSON body, or the upload streamed to the stores service), calls the action the route table names
 * (gateway/routes), and answers every error in the spec's shapes (gateway/error-answer, mapped in
 * gateway/http-errors). It uses moleculer-web through its documented settings, route hooks, alias
 * middlewares and overridable methods (`encodeResponse`), and the `rest` action's error hook answers
 * every error.
 */
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import fs from "node:fs";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import { Errors, type ActionHookError, type Context, type Service, type ServiceSchema } from "moleculer";
import ApiGateway from "moleculer-web";
import { call, Events } from "../shared/contracts";
import type { ApiKeyRevokedEvent } from "../shared/contracts/auth";
import type { AuthMeta, Caller, FreshnessMeta } from "../shared/contracts/common";
import type { RoundMemberJoinedEvent } from "../shared/contracts/rounds";
import type { ReleaseEventKeyParams } from "../shared/contracts/stores";
import type { UserListsChangedEvent, UserRemovedEvent } from "../shared/contracts/users";
import type { Config } from "../shared/config";
import {
  NotAuthenticatedError,
  PayloadTooLargeError,
  RequestAbandonedError,
  TokenInvalidError,
} from "../shared/errors";
import { noRetry, serviceConfig } from "../shared/runtime";
import { checkReadiness } from "../shared/runtime/readiness";
import { LEAVING_EVENT, STOPPING_EVENT } from "../shared/runtime/shutdown";
import { withinRequest } from "../shared/runtime/request-context";
import { AUTH_CACHE_ENTRIES, LocalCache } from "../shared/runtime/local-cache";
import { isRedis } from "../shared/runtime/redis-options";
import { HttpDrain } from "./gateway/drain";
import { answerClientError } from "./gateway/client-error";
import { answerError, answerNotRouted } from "./gateway/error-answer";
import { TokenCache } from "./gateway/token-cache";
import { ApiKeyCache } from "./gateway/api-key-cache";
import { RESPONSE_CACHE_BYTES, ResponseCache } from "./gateway/response-cache";
import { sendInChunks } from "./gateway/chunked-upload";
import { readEventMultipart } from "./gateway/multipart";
import { docsAsset, docsHtml } from "./gateway/docs-page";
import { buildOpenApi } from "./gateway/openapi";
import {
  enforceLimit,
  MemoryCounterStore,
  parseLimits,
  RateLimitedError,
  RedisCounterStore,
  type CounterStore,
} from "./gateway/rate-limit";
import { parseJsonBody, parseListBody, readRaw } from "./gateway/request-body";
import { continueTrace, traceRequest, type RootCallOptions } from "./gateway/request-span";
import { HttpMetrics } from "./gateway/http-metrics";
import { AccessLog } from "./gateway/access-log";
import { callerOfBearer, rememberIssued } from "./gateway/bearer";
import { JWKS_MAX_AGE_MS, JwksCache } from "./gateway/jwks-cache";
import { callerTag, JSON_BODY_LIMIT_BYTES, routeByAction, routes, type RouteSpec } from "./gateway/routes";
import { clientRequestId } from "./gateway/request-id";
import { paramsOfRequest, rateLimitCaller } from "./gateway/request-params";
import {
  UPLOAD_SLOT_WAIT_MS,
  UploadSlots,
  UPLOADS_MAX,
  UPLOADS_MAX_PER_CALLER,
} from "./gateway/upload-slots";
import { multicastBodyLimit, stageRecipientPages } from "./gateway/recipient-pages";
import {
  HTTP_BODY_IDLE_TIMEOUT_MS,
  httpServerOptions,
  markArrival,
  requestDeadline,
} from "./gateway/http-bounds";
import { isAbandoned, markAnsweredLate, RequestDeadlines } from "./gateway/request-deadlines";
import type { BodyBounds } from "./gateway/body-watch";
import { encodeAnswer, keptAnswer, microcacheSlot, type MicrocacheSlot } from "./gateway/microcache";
import { writeJson } from "./gateway/write-json";
import { NOSNIFF, setRouteAnswerHeaders } from "./gateway/answer-headers";
import { AddressLimits, AUTH_FAILURE_LIMIT } from "./gateway/address-limits";
import { addressKey, clientAddressOf, trustedProxyList } from "./gateway/client-address";
import { knownFields } from "./gateway/body-fields";
import { withHead } from "./gateway/head-aliases";
import { allowedMethodsOf } from "./gateway/allowed-methods";
import type { BlockList } from "node:net";

type Req = IncomingMessage & {
  $alias?: { action?: string; method?: string; fullPath?: string };
  /** The type of the error answered, for the request's span (tracing on only). */
  $errorType?: string;
  $params: Record<string, unknown>;
  $ctx?: Context;
  /** Set when this read's answer may be kept (gateway/microcache). */
  $microcache?: MicrocacheSlot;
  /** When the whole request must be answered (gateway/http-bounds). */
  $deadline?: number;
  /** The Idempotency-Key this upload holds, until given back (docs/decisions/0023). */
  $eventKey?: ReleaseEventKeyParams;
  /** The client address's key, as its limits count it (gateway/address-limits), once counted. */
  $addressKey?: string;
  /** The client address (gateway/client-address), once asked. */
  $clientAddress?: string;
  /** On a route that answers tokens: the active users' forgettings when it was authenticated. */
  $forgettingsAtStart?: number;
  /** Set once the deadline sweep answered it 504 (gateway/request-deadlines). */
  $answeredLate?: boolean;
  parsedUrl?: string;
  query?: Record<string, unknown>;
};
type Res = ServerResponse;

interface GatewayService extends Service {
  config: Config;
  /** Kept answers of reads (gateway/response-cache, decision 0045). */
  responses: ResponseCache;
  /** Tracing is on (TRACING_ENDPOINT): each request gets its span (gateway/request-span). */
  tracing: boolean;
  /** Per-route request counts and durations, with metrics on (METRICS_PORT; gateway/http-metrics). */
  httpMetrics: HttpMetrics | null;
  /** A line per sampled request, with ACCESS_LOG_SAMPLE above 0 (gateway/access-log). */
  accessLog: AccessLog | null;
  limits: Map<string, number>;
  counters: CounterStore | null;
  /** TRUSTED_PROXIES (null: X-Forwarded-For is never read). */
  proxies: BlockList | null;
  /** ADDRESS_RATE_LIMIT and AUTH_FAILURE_LIMIT, counted before authentication (gateway/address-limits). */
  addressLimits: AddressLimits;
  /** When limitRate last said the counter store is unavailable. */
  limitStoreWarnedAt: number;
  /** The API document's JSON, encoded once. */
  openApiJson: string;
  tokens: TokenCache;
  /** The access tokens' public keys, from auth (gateway/jwks-cache). */
  jwks: JwksCache;
  /** Users auth vouched for lately (see gateway/bearer). */
  activeUsers: LocalCache<true>;
  /** API keys auth accepted lately (gateway/api-key-cache). */
  apiKeys: ApiKeyCache;
  /** Uploads in progress in this process, per caller and in total. */
  uploads: UploadSlots;
  openApi: Record<string, unknown>;
  server: http.Server;
  drain: HttpDrain;
  /** Requests in flight, each answered 504 if still unanswered past its bound (gateway/request-deadlines). */
  deadlines: RequestDeadlines;
  beginDrain: () => void;
  leave: () => void;
  stopAccepting(): void;
  specOf(req: Req): RouteSpec | undefined;
  bodyLimitOf(spec: RouteSpec): number;
  addressOf(req: Req): string;
  limitAddress(req: Req): string;
  limitRate(ctx: Context<unknown, AuthMeta>, req: Req, spec: RouteSpec): Promise<void>;
  admit(req: Req, res: Res): void;
  readRequest(ctx: Context<unknown, AuthMeta>, req: Req, spec: RouteSpec): Promise<void>;
  readUpload(
    ctx: Context<unknown, AuthMeta>,
    req: Req,
    storeId: string,
    idempotencyKey: string | undefined,
  ): Promise<Record<string, unknown>>;
  receiveUpload(ctx: Context<unknown, AuthMeta>, req: Req, digest: boolean): Promise<Record<string, unknown>>;
  releaseEventKey(req: Req): Promise<void>;
  bodyBounds(req: Req): BodyBounds;
  sendJson(res: Res, status: number, body: unknown, headers?: Record<string, string>): void;
  /** moleculer-web's request handler as a middleware (its documented use with `server: false`). */
  express(): (req: IncomingMessage, res: ServerResponse, next?: () => void) => Promise<unknown>;
}

const MAX_TOKEN_LENGTH = 8192;

/** While the rate limits' counter store is unavailable, the gateway says so at most this often. */
const LIMIT_STORE_WARN_EVERY_MS = 10_000;
/** Client addresses counted in a minute at most (some 25 MB of counts; gateway/address-limits). */
const MAX_ADDRESSES_COUNTED = 200_000;

/** A multicast body above this is parsed a slice at a time (what a whole one costs: decision 0032). */
const LONG_BODY_BYTES = 1024 * 1024;

/** The request id of a request: the context's once it exists, else the client's X-Request-ID. */
function requestIdOf(req: Req): string | undefined {
  return req.$ctx?.requestID ?? clientRequestId(req.headers["x-request-id"]);
}

/** An event group of this gateway process alone, so events about caches reach every gateway. */
const gatewayGroup = `gateway-${randomUUID()}`;

/** Drops what missed events may have changed: verified tokens and keys, vouched users, kept answers. */
function forgetWhatEventsChange(gw: GatewayService): void {
  gw.tokens.clear();
  gw.activeUsers.clear();
  gw.apiKeys.clear();
  gw.responses.clear();
}

/**
 * The accept queue asked of the kernel (capped by `net.core.somaxconn`): Node's 511 overflowed in a
 * loaded burst, leaving clients on their SYN retransmits (decision 0073).
 */
const LISTEN_BACKLOG = 4096;

/** After the requests in flight have finished: how long idle and half-done connections get to close. */
const CONNECTION_CLOSE_MS = 1000;

/** Every service some route (or authentication) needs. */
const requiredServices = [...new Set(["auth", ...routes.map((r) => r.action.split(".")[0])])].sort();

/** "Bearer <token>" (scheme case-insensitive); anything else counts as no credentials (spec §7). */
function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return m ? m[1] : null;
}

/**
 * The HTTP server's request listener: moleculer-web's handler, with the gateway's own answer when no
 * route takes the request. An error escaping it is tagged with its request id, so the crash log names
 * the request (shared/runtime/crash); from Node 24 each request also runs in its own request context
 * (shared/runtime/request-context), which names it for detached callbacks too. With metrics on, every
 * request is counted by route and status (gateway/http-metrics), and a sampled share logged
 * (gateway/access-log).
 */
function requestListener(gw: GatewayService) {
  const handle = gw.express();
  const specOf = (req: IncomingMessage) => gw.specOf(req as Req);
  return (req: IncomingMessage, res: Res) => {
    markArrival(req);
    // Every answer of this response, whoever writes it (gateway/answer-headers).
    res.setHeader(NOSNIFF[0], NOSNIFF[1]);
    const timed = gw.deadlines.track(req, res);
    gw.httpMetrics?.track(req, res, specOf);
    gw.accessLog?.track(req, res, specOf, (r) => requestIdOf(r as Req));
    return withinRequest({ requestID: () => requestIdOf(req as Req) }, () =>
      handle(req, res, () => answerNotRouted(req, res, allowedMethods)).then(
        () => gw.deadlines.done(timed),
        (err: unknown) => {
          gw.deadlines.done(timed);
          if (err !== null && typeof err === "object" && !("requestID" in err)) {
            (err as { requestID?: string }).requestID = requestIdOf(req as Req);
          }
          throw err;
        },
      ),
    );
  };
}

/**
 * No route answers OPTIONS (decision 0036). moleculer-web takes an OPTIONS request for a CORS preflight
 * of the method in its Access-Control-Request-Method (GET without one) and, with no CORS configured,
 * runs that method's alias: OPTIONS would read, join or upload as GET and POST do.
 */
function refuseOptions(this: GatewayService, req: Req, res: Res, next: () => void): void {
  if (req.method === "OPTIONS") answerNotRouted(req, res, allowedMethods);
  else next();
}

/**
 * The request's span (tracing on: gateway/request-span), on the `rest` call's context. A route middleware
 * rather than a `before` hook of `rest`: an action hook puts promise steps in front of every request.
 */
function startRequestSpan(this: GatewayService, req: Req, _res: Res, next: () => void): void {
  if (this.tracing && req.$ctx) {
    const ctx = req.$ctx as Context<{ req: Req; res: Res }>;
    traceRequest(this, ctx, (r) => this.specOf(r as Req), this.config.tracingSampleRate);
  }
  next();
}

/** The request's context and its route, in an alias middleware (both are there once it runs). */
function stageOf(gw: GatewayService, req: Req): { ctx: Context<unknown, AuthMeta>; spec: RouteSpec } {
  return { ctx: req.$ctx as Context<unknown, AuthMeta>, spec: gw.specOf(req) as RouteSpec };
}

/** RATE_LIMITS, per caller: an alias middleware, so it counts the authenticated caller. */
function limitRateStage(this: GatewayService, req: Req, _res: Res, next: (err?: unknown) => void): void {
  const { ctx, spec } = stageOf(this, req);
  this.limitRate(ctx, req, spec).then(() => next(), next);
}

/** The request's parameters and body (`readRequest`): an alias middleware, after authentication. */
function readRequestStage(this: GatewayService, req: Req, _res: Res, next: (err?: unknown) => void): void {
  const { ctx, spec } = stageOf(this, req);
  this.readRequest(ctx, req, spec).then(() => next(), next);
}

/**
 * What a route's alias runs after moleculer-web's authentication and before it calls the action
 * (moleculer-web's alias middlewares): the caller's rate limit, the request's parameters and body, and
 * for a read the route marks, its kept answer.
 */
function aliasStages(route: RouteSpec): Array<string | typeof answerKept> {
  const stages = [limitRateStage, readRequestStage];
  if (route.microcacheTag) stages.push(answerKept);
  return [...stages, route.action];
}

/**
 * A read the route marks is answered from the gateway's kept answer while fresh (gateway/microcache);
 * else the slot its answer will be kept in is noted for `encodeResponse`. An alias middleware: it runs
 * after authentication and authorization, before the action is called, and ends the response itself
 * when it answers.
 */
function answerKept(this: GatewayService, req: Req, res: Res, next: () => void): void {
  const userId = (req.$ctx?.meta as AuthMeta | undefined)?.user?.id;
  const slot = microcacheSlot(this.responses, this.specOf(req), userId, req.$params);
  if (slot) {
    const kept = keptAnswer(this.responses, slot, Date.now());
    if (kept !== null) return writeJson(res, 200, kept.json, undefined, kept.bytes);
    req.$microcache = slot;
  }
  next();
}

/** The `rest` action's error hook: answers the error, and the request counts as routed. */
function answeredErrorHook(this: GatewayService, ctx: Context<{ req: Req; res: Res }>, err: unknown) {
  this.answerError(ctx.params.req, ctx.params.res, err);
  return true;
}

/**
 * moleculer-web's aliases: each route's action after its stages (aliasStages), and the gateway's own
 * pages. HEAD wherever GET works (RFC 9110 §9.3.2): the same route, Node's server leaves the body out.
 */
const aliases = withHead({
  ...Object.fromEntries(routes.map((r) => [`${r.method} ${r.path}`, aliasStages(r)])),
  // The printed API address opened in a browser: the API reference.
  "GET /"(_req: Req, res: Res) {
    res.writeHead(302, { Location: "/docs", "Content-Length": 0 });
    res.end();
  },
  "GET /health"(this: GatewayService, _req: Req, res: Res) {
    const ready = this.broker.started;
    this.sendJson(res, ready ? 200 : 503, { status: ready ? "ok" : "starting" });
  },
  "GET /health/ready"(this: GatewayService, _req: Req, res: Res) {
    // Outside the spec: transporter, cacher, and every service behind a route with its store.
    void checkReadiness(this.broker, requiredServices, { localOnly: false, cacher: true }).then((r) =>
      this.sendJson(res, r.status === "ready" ? 200 : 503, r),
    );
  },
  // The access tokens' public keys (RFC 7517), for any backend that verifies them (decision 0132).
  "GET /.well-known/jwks.json"(this: GatewayService, _req: Req, res: Res) {
    void this.jwks.jwks(Date.now()).then((jwks) =>
      jwks
        ? this.sendJson(res, 200, jwks, {
            "Cache-Control": `public, max-age=${JWKS_MAX_AGE_MS / 1000}`,
          })
        : this.sendJson(res, 503, { detail: "Service Unavailable" }, { "Retry-After": "5" }),
    );
  },
  "GET /openapi.json"(this: GatewayService, _req: Req, res: Res) {
    writeJson(res, 200, this.openApiJson);
  },
  "GET /docs"(this: GatewayService, _req: Req, res: Res) {
    res.writeHead(200, {
      "Content-Type": "text/html; charset=utf-8",
      "Content-Length": Buffer.byteLength(docsHtml),
    });
    res.end(docsHtml);
  },
  "GET /docs/:file"(this: GatewayService, req: Req, res: Res) {
    const asset = docsAsset(String(req.$params.file));
    if (!asset) return this.sendJson(res, 404, { detail: "Not Found" });
    res.writeHead(200, { "Content-Type": asset.type, "Cache-Control": "public, max-age=86400" });
    fs.createReadStream(asset.file).pipe(res);
  },
});

/** For a 405's Allow (gateway/allowed-methods). */
const allowedMethods = allowedMethodsOf(Object.keys(aliases));

const GatewayServiceSchema: ServiceSchema<Record<string, unknown>, GatewayService> = {
  name: "gateway",

  mixins: [ApiGateway as unknown as Partial<ServiceSchema>],

  settings: {
    // The gateway owns its HTTP server (moleculer-web's documented `server: false`): created with explicit
    // time bounds (gateway/http-bounds), listening on one socket of its port.
    server: false,
    // The whole HTTP request runs as one call of `rest` (see below). Its time bound is kept by
    // gateway/request-deadlines rather than by a Moleculer timeout on that call (decision 0073); each
    // call it makes to a service keeps its own REQUEST_TIMEOUT_MS.
    // A function: moleculer-web checks a plain object with lodash's isPlainObject on every request.
    // It also vets the client's X-Request-ID, which moleculer-web puts here (gateway/request-id).
    // With tracing on, a caller's trace context (traceparent, B3) is continued (gateway/request-span).
    rootCallOptions(this: GatewayService, options: RootCallOptions & { timeout?: number }, req: Req) {
      options.timeout = 0;
      if (options.requestID !== undefined) options.requestID = clientRequestId(options.requestID);
      if (this.tracing) continueTrace(options, req);
    },
    // Every error leaves in the spec's shape (moleculer-web's global error handler).
    onError(this: GatewayService, req: Req, res: Res, err: unknown) {
      this.answerError(req, res, err);
    },
    // Request logging is off the hot path; errors are logged where they are answered.
    logRequest: null,
    logResponse: null,
    log4XXResponses: false,
    routes: [
      {
        path: "/",
        mappingPolicy: "restrict",
        autoAliases: false,
        // Bodies are read after authentication, by the alias's `readRequestStage` (see aliasStages).
        bodyParsers: false,
        authentication: true,
        // moleculer-web's documented route middlewares run first for every request under the route.
        use: [refuseOptions, startRequestSpan],
        onBeforeCall(this: GatewayService, _ctx: Context, _route: unknown, req: Req, res: Res) {
          this.admit(req, res);
        },
        // The access token a refresh answers is known here at once (gateway/bearer, rememberIssued).
        onAfterCall(
          this: GatewayService,
          _ctx: Context,
          _route: unknown,
          req: Req,
          _res: Res,
          data: unknown,
        ) {
          if (req.$forgettingsAtStart !== undefined && data && typeof data === "object") {
            const issued = (data as { access_token?: unknown }).access_token;
            rememberIssued(this, issued, req.$forgettingsAtStart, Date.now());
          }
          return data;
        },
        aliases,
      },
    ],
  },

  actions: {
    // Options for moleculer-web's own `rest` action (its handler is kept: mixins merge action options).
    // It runs each HTTP request: the broker's retry policy must never repeat it (the body is already
    // read; a second run would wait for it forever). Retries happen one level down, on the calls to the
    // services, where they are safe.
    rest: {
      retryPolicy: noRetry,
      // The request's span is made by the hook below (gateway/request-span), not by Moleculer's action
      // tracing, whose span would end before an error's answer is written and so could not tell the status.
      tracing: false,
      // The bulkhead bounds calls to services (each of which this request makes as its own call); counted
      // here it would put every HTTP request in one queue, where slow uploads took the capacity of reads.
      // Uploads have bounds of their own (gateway/upload-slots), and every request a time budget.
      bulkhead: { enabled: false },
    },
  },

  hooks: {
    // An error of the request (authentication, its body, its action) is answered here, in the spec's
    // shape, and the request counts as handled: the call resolves with what an error hook returns
    // (Moleculer's hook middleware; its typings declare void), and a non-null answer tells moleculer-web
    // the request was routed. Its own handler would first log every 5xx with its stack,
    // where gateway/error-answer logs only what is a fault.
    error: {
      rest: answeredErrorHook as unknown as ActionHookError,
    },
  },

  events: {
    // Every gateway process forgets the removed user's tokens: a group of its own per process, so the
    // event reaches each gateway instead of one of them.
    [Events.userRemoved]: {
      group: gatewayGroup,
      handler(this: GatewayService, ctx: Context<UserRemovedEvent>) {
        this.tokens.forgetUser(ctx.params.user_id);
        this.activeUsers.delete(ctx.params.user_id);
        // The removed user vanishes from rounds and friends lists of any caller: drop every kept answer.
        this.responses.userRemoved(ctx.params.user_id, Date.now());
      },
    },
    // A revoked API key is asked of auth again, which refuses it (same per-process group).
    [Events.apiKeyRevoked]: {
      group: gatewayGroup,
      handler(this: GatewayService, ctx: Context<ApiKeyRevokedEvent>) {
        this.apiKeys.forget(ctx.params.key_id);
      },
    },
    // Events sent while this process was cut off from the transporter (a `user.removed` among them)
    // never reach it, so on every connection it forgets what they would have changed, as Moleculer's own
    // memory cacher does on `$transporter.connected` (raised on a nats 2.x reconnect too:
    // shared/runtime/nats-transporter).
    "$transporter.connected"(this: GatewayService) {
      forgetWhatEventsChange(this);
    },
    // An auth process came or went (a rolling update, a key rotation): its keys are asked for again at
    // the next token, so a key removed from auth stops verifying here at once (gateway/jwks-cache).
    "$services.changed"(this: GatewayService) {
      this.jwks.stale();
    },
    // A friendship or a payment changed these users' lists (same per-process group).
    [Events.userListsChanged]: {
      group: gatewayGroup,
      handler(this: GatewayService, ctx: Context<UserListsChangedEvent>) {
        for (const id of ctx.params.user_ids) this.responses.dropTag(callerTag(id));
      },
    },
    // A join changes the round for every caller: drop its kept answers (same per-process group).
    [Events.roundMemberJoined]: {
      group: gatewayGroup,
      handler(this: GatewayService, ctx: Context<RoundMemberJoinedEvent>) {
        this.responses.dropTag(ctx.params.round_id);
      },
    },
  },

  methods: {
    /** Closes the listening socket; the connections open finish (gateway/drain). */
    stopAccepting(this: GatewayService): void {
      if (this.server.listening) this.server.close();
    },

    specOf(req: Req): RouteSpec | undefined {
      const action = req.$alias?.action;
      return action ? routeByAction.get(action) : undefined;
    },

    /** Answers `err` in the spec's shape (gateway/error-answer); never throws. */
    answerError(this: GatewayService, req: Req, res: Res, err: unknown): void {
      // An upload that failed after it took its Idempotency-Key, past the points that give it back
      // themselves (a `createEvent` call that never reached the stores service, or timed out).
      if (req.$eventKey) void this.releaseEventKey(req);
      // An error met before authentication (no node for the action) is still the route's answer.
      const spec = this.specOf(req);
      if (spec) setRouteAnswerHeaders(res, spec);
      answerError(req, res, err, {
        logger: this.logger,
        spec: this.specOf(req),
        requestID: requestIdOf(req),
        tracing: this.tracing,
      });
    },

    /**
     * Before the credentials are looked at (moleculer-web's `onBeforeCall`, which it runs before
     * `authenticate`): counts the request against its client address (gateway/address-limits), sets the
     * route's answer headers (gateway/answer-headers) and refuses a body declared larger than the route
     * takes, unread.
     */
    admit(this: GatewayService, req: Req, res: Res): void {
      const spec = this.specOf(req);
      if (!spec) {
        // Probes are never refused; the API document and its page are counted as any request.
        if (!req.$alias?.fullPath?.startsWith("/health")) this.limitAddress(req);
        return;
      }
      setRouteAnswerHeaders(res, spec);
      req.$addressKey = this.limitAddress(req);
      if (spec.body === "json-object" || spec.body === "json-object-or-null") {
        // A chunked body is cut as soon as it passes (gateway/request-body).
        const limit = this.bodyLimitOf(spec);
        if (Number(req.headers["content-length"]) > limit)
          throw new PayloadTooLargeError(`Request body too large (limit ${limit} bytes)`);
      }
    },

    /** Spec §5/§7: bearer or API key, per route; sets ctx.meta.user. Runs before the body is read. */
    async authenticate(
      this: GatewayService,
      ctx: Context,
      _route: unknown,
      req: Req,
    ): Promise<Caller | null> {
      const spec = this.specOf(req);
      if (!spec) return null;
      const address = req.$addressKey ?? addressKey(this.addressOf(req));
      if (spec.auth === "none") return null;
      let presented = false;
      // Each call to auth first asks whether this address may still cost one.
      const mayAsk = () => this.addressLimits.mayAskAuth(address);
      try {
        if (spec.auth === "bearer") {
          const token = bearerToken(req.headers.authorization);
          if (!token) throw new NotAuthenticatedError();
          presented = true;
          if (token.length > MAX_TOKEN_LENGTH) throw new TokenInvalidError("jwt malformed");
          if (spec.answersTokens) req.$forgettingsAtStart = this.activeUsers.forgettings;
          return await callerOfBearer(
            {
              tokens: this.tokens,
              activeUsers: this.activeUsers,
              keys: this.jwks,
              config: this.config,
              askAuth: (t, ignore) => {
                mayAsk();
                return call(ctx, "auth.verifyAccessToken", { token: t, ignore_expiration: ignore });
              },
              isActive: async (id) => {
                const status = await call(ctx, "users.status", { id });
                return status.exists && !status.removed;
              },
            },
            token,
            spec.acceptExpiredToken ?? false,
            Date.now(),
          );
        }
        const key = req.headers["x-api-key"];
        if (typeof key !== "string" || key === "") throw new NotAuthenticatedError();
        presented = true;
        const keyId = await this.apiKeys.keyIdOf(
          key,
          spec.apiKeyScope ?? "app",
          (k, scope) => {
            mayAsk();
            return call(ctx, "auth.verifyApiKey", { key: k, scope });
          },
          Date.now(),
        );
        (ctx.meta as { apiKey?: { key_id: string } }).apiKey = { key_id: keyId };
        return null;
      } catch (err) {
        // Credentials given and refused count against the address (none given cost nothing).
        if (presented && (err as { code?: unknown } | null)?.code === 401) this.addressLimits.failed(address);
        throw err;
      }
    },

    /** The client address of a request, as the limits count it (gateway/client-address). */
    addressOf(this: GatewayService, req: Req): string {
      return clientAddressOf(req, this.proxies);
    },

    /** Counts the request against its client address (429 past ADDRESS_RATE_LIMIT); the address's key. */
    limitAddress(this: GatewayService, req: Req): string {
      const key = addressKey(this.addressOf(req));

      try {
        this.addressLimits.request(key);
      } finally {
        if (this.addressLimits.tellFull())
          this.logger.warn("Too many client addresses this minute: new ones go uncounted until it ends");
      }
      return key;
    },

    /** The largest JSON body a route reads (docs/decisions/0037). */
    bodyLimitOf(this: GatewayService, spec: RouteSpec): number {
      return (
        spec.bodyLimitBytes ?? (spec.recipientPages ? multicastBodyLimit(this.config) : JSON_BODY_LIMIT_BYTES)
      );
    },

    /**
     * Turns path, query, headers and body into the action's parameters: the JSON body or the multipart
     * upload, read only now, after authentication (an alias middleware, `readRequestStage`).
     */
    async readRequest(this: GatewayService, ctx: Context<unknown, AuthMeta>, req: Req, spec: RouteSpec) {
      const { path, headers, query } = paramsOfRequest(spec, req);
      if (spec.body === "multipart") {
        const key = typeof headers.idempotency_key === "string" ? headers.idempotency_key : undefined;
        const upload = await this.readUpload(ctx, req, String(path.store_id), key);
        // Form fields the form does not name are dropped here (gateway/body-fields).
        req.$params = {
          ...path,
          ...upload,
          fields: knownFields(spec, upload.fields as Record<string, string>),
        };
        if (isAbandoned(req)) throw new RequestAbandonedError();
        return;
      }
      let body: Record<string, unknown> = {};
      if (spec.body === "json-object" || spec.body === "json-object-or-null") {
        const raw = await readRaw(req, this.bodyLimitOf(spec), this.bodyBounds(req));
        // A long list is read a slice at a time (gateway/request-body), the rest in one piece.
        const long = spec.recipientPages && raw.length > LONG_BODY_BYTES;
        const parsed = (long ? await parseListBody(raw, "user_ids") : null) ?? parseJsonBody(raw, spec.body);
        // Only the fields the action's contract names go on (gateway/body-fields).
        body = knownFields(spec, parsed);
      }
      req.$params = { ...body, ...headers, ...query, ...path };
      if (spec.recipientPages) {
        req.$params = await stageRecipientPages(
          (page) => call(ctx, "notifier.stageRecipients", page),
          req.$params,
        );
      }
      // A request kept long on the way here (a body slow to come, a counter store that did not answer)
      // may have been answered 504 meanwhile, or left by its client, which then sends it again: the
      // service must not act on it a second time unseen (a refresh rotated twice revokes its family).
      if (isAbandoned(req)) throw new RequestAbandonedError();
    },

    /**
     * The store-event upload: permission first (an outsider's 10 MB are never read), and with it the
     * Idempotency-Key taken for this request (409 while another request holds it), then the multipart
     * body, its picture streamed to the stores service as it arrives (and hashed there, with a key).
     * A failure before `createEvent` gives the key back at once, so a retry need not wait for it.
     */
    async readUpload(
      this: GatewayService,
      ctx: Context<unknown, AuthMeta>,
      req: Req,
      storeId: string,
      idempotencyKey: string | undefined,
    ) {
      const userId = ctx.meta.user?.id;
      if (!userId) throw new NotAuthenticatedError();
      const held =
        idempotencyKey === undefined
          ? undefined
          : { user_id: userId, idempotency_key: idempotencyKey, lease: randomUUID() };
      req.$eventKey = held;
      try {
        await call(ctx, "stores.checkEventPermission", {
          store_id: storeId,
          user_id: userId,
          ...(held ? { idempotency_key: held.idempotency_key, lease: held.lease } : {}),
        }).catch((err: unknown) => {
          // A refusal (404, 403, 409, a bad key's 422) took nothing; another failure may have come after
          // the key was taken.
          const code = (err as { code?: unknown } | null)?.code;
          if (typeof code === "number" && code < 500) req.$eventKey = undefined;
          throw err;
        });
        // Beyond the slots it waits a moment (gateway/upload-slots), until the client goes away at most.
        const gone = new AbortController();
        const leftEarly = () => gone.abort();
        req.socket.once("close", leftEarly);
        const release = await this.uploads
          .take(userId, this.bodyBounds(req).deadline, gone.signal)
          .finally(() => req.socket.off("close", leftEarly));
        try {
          const upload = await this.receiveUpload(ctx, req, held !== undefined);
          return held ? { ...upload, idempotency: { key: held.idempotency_key, lease: held.lease } } : upload;
        } finally {
          release();
        }
      } catch (err) {
        await this.releaseEventKey(req);
        throw err;
      }
    },

    /**
     * Gives this request's Idempotency-Key back (once). Not a call of the request's context: its time may
     * be spent (a 408 at the deadline), and the key must still go back.
     */
    async releaseEventKey(this: GatewayService, req: Req): Promise<void> {
      const held = req.$eventKey;
      if (!held) return;
      req.$eventKey = undefined;
      await call(this.broker, "stores.releaseEventKey", held).catch((err: unknown) =>
        this.logger.warn("Giving an Idempotency-Key back failed; it frees itself when its lease ends", err),
      );
    },

    /** The multipart body, its picture streamed to the stores service as it arrives. */
    async receiveUpload(this: GatewayService, ctx: Context<unknown, AuthMeta>, req: Req, digest: boolean) {
      const form = await readEventMultipart(
        req,
        { fileBytes: this.config.pictureMaxBytes, fields: 40, fieldBytes: 64 * 1024 },
        (file) =>
          sendInChunks(file, {
            begin: () => ctx.call("stores.stageBegin", digest ? { sha256: true } : {}),
            chunk: (id, nodeID, bytes) =>
              ctx.call("stores.stageChunk", { staged_id: id, chunk: bytes }, { nodeID }),
            end: (id, nodeID) => ctx.call("stores.stageEnd", { staged_id: id }, { nodeID }),
            discard: (id, nodeID) => ctx.call("stores.discardStaged", { staged_id: id }, { nodeID }),
          }),
        (stagedId) => call(ctx, "stores.discardStaged", { staged_id: stagedId }),
        this.bodyBounds(req),
      );
      return { fields: form.fields, picture: form.picture };
    },

    /** How long this request's body may go without a byte, and when it must be in. */
    bodyBounds(this: GatewayService, req: Req): BodyBounds {
      return { idleMs: HTTP_BODY_IDLE_TIMEOUT_MS, deadline: requestDeadline(req) };
    },

    /** RATE_LIMITS, per caller (gateway/request-params). */
    async limitRate(
      this: GatewayService,
      ctx: Context<unknown, AuthMeta>,
      req: Req,
      spec: RouteSpec,
    ): Promise<void> {
      if (!this.counters) return;
      const caller = rateLimitCaller(
        ctx.meta as AuthMeta & { apiKey?: { key_id: string } },
        this.addressOf(req),
      );
      try {
        await enforceLimit(this.counters, this.limits, spec.action, caller);
      } catch (err) {
        if (err instanceof RateLimitedError) throw err;
        // The counter store is down: serve rather than refuse everyone, and say so once in a while
        // rather than once per request.
        const now = Date.now();
        if (now - this.limitStoreWarnedAt >= LIMIT_STORE_WARN_EVERY_MS) {
          this.limitStoreWarnedAt = now;
          this.logger.warn(
            `Rate limit store unavailable (${(err as Error).message}); requests allowed uncounted meanwhile`,
          );
        }
      }
    },

    /**
     * moleculer-web's documented encoder of answers, overridden: a microcached read's answer is kept as
     * it is encoded (gateway/microcache).
     */
    encodeResponse(this: GatewayService, req: Req, res: Res, data: unknown): string {
      return encodeAnswer(this.responses, req.$microcache, req.$ctx?.meta as FreshnessMeta, res, data);
    },

    sendJson(res: Res, status: number, body: unknown, headers: Record<string, string> = {}) {
      writeJson(res, status, JSON.stringify(body), headers);
    },
  },

  created(this: GatewayService) {
    this.config = serviceConfig(this);
    this.tracing = this.broker.isTracingEnabled();
    this.httpMetrics = HttpMetrics.of(this.broker);
    this.accessLog = AccessLog.of(
      this.config.accessLogSample,
      this.broker.getLogger("access"),
      this.config.logFormat === "json",
    );
    this.limits = parseLimits(this.config.rateLimits);
    this.proxies = trustedProxyList(this.config.trustedProxies);
    this.limitStoreWarnedAt = 0;
    this.addressLimits = new AddressLimits({
      requestsPerMinute: this.config.addressRateLimit,
      failuresPerMinute: AUTH_FAILURE_LIMIT,
      maxAddresses: MAX_ADDRESSES_COUNTED,
    });
    this.counters =
      this.limits.size === 0
        ? null
        : isRedis(this.config.cacher)
          ? new RedisCounterStore(
              this.config.cacher,
              `${this.config.namespace || "rounds"}-ratelimit`,
              this.config,
            )
          : new MemoryCounterStore();
    this.tokens = new TokenCache(this.config.authCacheSeconds * 1000, AUTH_CACHE_ENTRIES);
    this.jwks = new JwksCache(
      () => call(this.broker, "auth.jwks", {}),
      (message, err) => this.logger.warn(message, err),
    );
    this.activeUsers = new LocalCache(this.config.authCacheSeconds * 1000, AUTH_CACHE_ENTRIES);
    this.apiKeys = new ApiKeyCache(this.config.authCacheSeconds * 1000, AUTH_CACHE_ENTRIES);
    this.responses = new ResponseCache({
      maxAgeMs: this.config.responseCacheMs,
      // Entries are bounded by their bytes; this only bounds the index of very small ones.
      maxEntries: 200_000,
      sharedMaxAgeMs: this.config.cacheTtlSeconds * 1000,
      maxBytes: RESPONSE_CACHE_BYTES,
    });
    this.uploads = new UploadSlots(UPLOADS_MAX, UPLOADS_MAX_PER_CALLER, UPLOAD_SLOT_WAIT_MS);
    this.openApi = buildOpenApi(routes, this.config.publicUrl);
    this.openApiJson = JSON.stringify(this.openApi);
    this.server = http.createServer(httpServerOptions(this.config), requestListener(this));
    this.server.on("error", (err) => this.logger.error("HTTP server error", err));
    // What Node's HTTP parser refuses is answered in the spec's shape too (gateway/client-error).
    this.server.on("clientError", answerClientError);
    this.drain = new HttpDrain(this.server, () => this.stopAccepting());
    this.beginDrain = () => this.drain.begin();
    this.leave = () => this.drain.leave();
    const late = () => new Errors.RequestTimeoutError({ action: "rest", nodeID: this.broker.nodeID });
    this.deadlines = new RequestDeadlines((req, res) => {
      markAnsweredLate(req as Req);
      this.answerError(req as Req, res, late());
    });
  },

  async started(this: GatewayService) {
    // One socket of its port (Node's documented listen), with an accept queue of LISTEN_BACKLOG.
    const { port, host } = this.config;
    this.server.listen({ port, host, backlog: LISTEN_BACKLOG });
    // Resolves once listening; a failure to listen (EADDRINUSE) rejects, and the start fails.
    await once(this.server, "listening");
    this.deadlines.start();
    const address = this.server.address();
    if (address && typeof address === "object") {
      this.logger.info(`API Gateway listening on http://${address.address}:${address.port}`);
    }
    // The stop is asked for (SIGTERM): /health/ready answers 503 (checkReadiness) and, for
    // SHUTDOWN_DELAY_MS, the server still serves, each answer closing its connection (gateway/drain).
    this.broker.localBus.on(LEAVING_EVENT, this.leave);
    // The stop begins: take no new connections while Moleculer waits for the requests in flight.
    this.broker.localBus.on(STOPPING_EVENT, this.beginDrain);
  },

  // Runs before moleculer-web's own `stopped` (lifecycle handlers of mixins run in reverse on stop),
  // which has no server of its own to close.
  async stopped(this: GatewayService) {
    this.broker.localBus.off(LEAVING_EVENT, this.leave);
    this.broker.localBus.off(STOPPING_EVENT, this.beginDrain);
    await this.drain.end(CONNECTION_CLOSE_MS);
    this.deadlines.stop();
    await this.counters?.close();
  },
};

export default GatewayServiceSchema;
