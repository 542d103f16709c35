/**
 * gateway: the HTTP face of the system (moleculer-web). Holds no domain logic: it authenticates, reads
 * the request into action parameters, calls the action the route table names, and maps every error to
 * the spec's bodies in one place (gateway/http-errors.ts).
 */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { Context, Service, ServiceSchema } from "moleculer";
import ApiGateway from "moleculer-web";
import { call, Events } from "../shared/contracts";
import type { AuthMeta, Caller, FreshnessMeta } from "../shared/contracts/common";
import type { RoundMemberJoinedEvent } from "../shared/contracts/rounds";
import type { UserListsChangedEvent, UserRemovedEvent } from "../shared/contracts/users";
import type { Config } from "../shared/config";
import { NotAuthenticatedError, TokenInvalidError } from "../shared/errors";
import { noRetry, serviceConfig } from "../shared/runtime";
import { checkReadiness } from "../shared/runtime/readiness";
import { STOPPING_EVENT } from "../shared/runtime/shutdown";
import { HttpDrain } from "./gateway/drain";
import { openAcceptors, type Acceptors } from "./gateway/acceptors";
import { encodeHttpError, FALLBACK_ERROR_JSON, toHttpError } from "./gateway/http-errors";
import { answerClientError } from "./gateway/client-error";
import { withinRequest } from "../shared/runtime/request-context";
import { TokenCache } from "./gateway/token-cache";
import { ResponseCache, type JsonBody } from "./gateway/response-cache";
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
import { parseJsonBody, readRaw } from "./gateway/request-body";
import { RawJson, type RawJsonMeta } from "../shared/runtime/raw-json";
import { traceRequest } from "./gateway/request-span";
import { callerOfBearer } from "./gateway/bearer";
import { LocalCache } from "../shared/runtime/local-cache";
import {
  CALLER_TAG,
  callerTag,
  isUploadRequest,
  pathParamsOf,
  routeByAction,
  routes,
  type RouteSpec,
} from "./gateway/routes";
import { UploadSlots } from "./gateway/upload-slots";
import { httpServerOptions, requestBudgetMs, REST_TIMEOUT_MARGIN_MS } from "./gateway/http-bounds";
import type { BodyBounds } from "./gateway/body-watch";

type Req = IncomingMessage & {
  $alias?: { action?: string; method?: string; fullPath?: string };
  /** The type of the error answered, for the request's span (tracing on only). */
  $errorType?: string;
  $params: Record<string, unknown>;
  $ctx?: Context;
  /** Set when this read's answer may be kept (see callAction). */
  $microcache?: MicrocacheSlot;
  /** When the gateway took the request (its headers were in), for its time bounds. */
  $arrivedAt?: number;
  parsedUrl?: string;
  query?: Record<string, unknown>;
};
type Res = ServerResponse;

interface AliasLike {
  method: string;
  action: string | null;
  match(url: string): Record<string, string> | false;
}

interface GatewayService extends Service {
  config: Config;
  /** Tracing is on (TRACING_ENDPOINT): each request gets its span (gateway/request-span). */
  tracing: boolean;
  limits: Map<string, number>;
  counters: CounterStore | null;
  tokens: TokenCache;
  /** Users auth vouched for lately (see gateway/bearer). */
  activeUsers: LocalCache<true>;
  responses: ResponseCache;
  /** Whether answers reach this gateway as RawJson intact (no transporter, or the Hybrid serializer). */
  takesRawJson: boolean;
  limitRate(ctx: Context<unknown, AuthMeta>, req: Req, spec: RouteSpec): Promise<void>;
  /** Uploads in progress in this process, per caller and in total. */
  uploads: UploadSlots;
  bodyBounds(req: Req): BodyBounds;
  /** moleculer-web's request handler in the shape of a middleware (its documented use with `server: false`). */
  express(): (req: IncomingMessage, res: ServerResponse) => void;
  openApi: Record<string, unknown>;
  aliases: AliasLike[];
  server: import("node:http").Server;
  drain: HttpDrain;
  /** The listening sockets of the port, once listening. */
  acceptors?: Acceptors;
  stopAccepting(): void;
  beginDrain: () => void;
  specOf(req: Req): RouteSpec | undefined;
  readUpload(ctx: Context<unknown, AuthMeta>, req: Req, storeId: string): Promise<Record<string, unknown>>;
  receiveUpload(ctx: Context<unknown, AuthMeta>, req: Req): Promise<Record<string, unknown>>;
  sendJson(res: Res, status: number, body: unknown, headers?: Record<string, string>): void;
  microcacheSlot(req: Req, params: Record<string, unknown>): MicrocacheSlot | null;
  keepAnswer(req: Req, res: Res, json: JsonBody): void;
}

const MAX_TOKEN_LENGTH = 8192;

/** moleculer-web's own methods the overrides fall back to. */
const apiGatewayMethods = (
  ApiGateway as unknown as {
    methods: {
      callAction: (...args: unknown[]) => unknown;
      httpHandler: (...args: unknown[]) => Promise<unknown>;
      sendResponse: (...args: unknown[]) => unknown;
    };
  }
).methods;
const apiGatewayCallAction = apiGatewayMethods.callAction;
const apiGatewayRest = (
  ApiGateway as unknown as { actions: { rest: { handler: (ctx: Context) => Promise<unknown> } } }
).actions.rest.handler;
const apiGatewayHttpHandler = apiGatewayMethods.httpHandler;
const apiGatewaySendResponse = apiGatewayMethods.sendResponse;

/** What moleculer-web's answer writer reads of the action called. */
type ActionLike = { responseType?: unknown; responseHeaders?: unknown };

/** The request id of a request: the context's once it exists, else the client's X-Request-ID. */
function requestIdOf(req: Req): string | undefined {
  const id = req.$ctx?.requestID ?? req.headers["x-request-id"];
  return typeof id === "string" ? id : undefined;
}

/** What a request's span calls the error answered: the AppError type constant, else the error's name. */
function errorTypeOf(err: unknown): string {
  const e = (err ?? {}) as { type?: unknown; name?: unknown };
  if (typeof e.type === "string" && e.type) return e.type;
  return typeof e.name === "string" && e.name ? e.name : "Error";
}

/** An event group of this gateway process alone, so events about caches reach every gateway. */
const gatewayGroup = `gateway-${randomUUID()}`;

/** Where a microcached read's answer is kept: its tag (e.g. the round) and the caller with the params. */
interface MicrocacheSlot {
  tag: string;
  key: string;
  /**
   * A caller's own list stays right until an event about it (only the cap applies); a round read says
   * itself until when it is right (its clock-driven fields), in `ctx.meta.$freshUntil`.
   */
  untilEvent: boolean;
}

const byteLengthOf = (json: JsonBody): number =>
  typeof json === "string" || Buffer.isBuffer(json)
    ? Buffer.byteLength(json)
    : json.reduce((sum, part) => sum + part.length, 0);

/**
 * Writes an answer already encoded as JSON, headers and body in one go. Parts are written in turn: Node
 * corks the socket for a response's writes within a tick, so they still leave in one system call.
 */
function writeJson(res: Res, status: number, json: JsonBody, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": byteLengthOf(json),
    ...headers,
  });
  if (typeof json === "string" || Buffer.isBuffer(json)) {
    res.end(json);
    return;
  }
  for (let i = 0; i < json.length - 1; i++) res.write(json[i]);
  res.end(json[json.length - 1]);
}

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

const GatewayServiceSchema: ServiceSchema<Record<string, unknown>, GatewayService> = {
  name: "gateway",

  mixins: [ApiGateway as unknown as Partial<ServiceSchema>],

  settings: {
    // The gateway owns its HTTP server (moleculer-web's documented `server: false`): created with explicit
    // time bounds (gateway/http-bounds) and listening on several sockets (gateway/acceptors).
    server: false,
    // Each request's time budget: the whole HTTP request runs as one call of `rest` (see below).
    rootCallOptions(this: GatewayService, options: { timeout?: number }, req: Req) {
      req.$arrivedAt = Date.now();
      options.timeout =
        requestBudgetMs(this.config, isUploadRequest(req.method, req.url)) + REST_TIMEOUT_MARGIN_MS;
    },
    // Request logging is off the hot path; errors are logged where they are mapped.
    logRequest: null,
    logResponse: null,
    log4XXResponses: false,
    routes: [
      {
        path: "/",
        mappingPolicy: "restrict",
        autoAliases: false,
        bodyParsers: false, // bodies are read after authentication, see authorize()
        authentication: true,
        authorization: true,
        aliases: {
          ...Object.fromEntries(routes.map((r) => [`${r.method} ${r.path}`, r.action])),
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
          "GET /openapi.json"(this: GatewayService, _req: Req, res: Res) {
            this.sendJson(res, 200, this.openApi);
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
        },
      },
    ],
  },

  actions: {
    // moleculer-web runs each HTTP request as a call of this action: the broker's retry policy must never
    // repeat it (the body is already read; a second run would wait for it forever). Retries happen one
    // level down, on the calls to the services, where they are safe.
    rest: {
      retryPolicy: noRetry,
      // The bulkhead bounds calls to services (each of which this request makes as its own call); counted
      // here it would put every HTTP request in one queue, where slow uploads took the capacity of reads.
      // Uploads have bounds of their own (gateway/upload-slots), and every request a time budget.
      bulkhead: { enabled: false },
      // The request's span is made here (gateway/request-span), not by Moleculer's action tracing, whose
      // span would end before an error's answer is written and so could not tell the status.
      tracing: false,
      handler(this: GatewayService, ctx: Context<{ req: Req; res: Res }>) {
        if (this.tracing) traceRequest(this, ctx, (req) => this.specOf(req as Req));
        return apiGatewayRest.call(this, ctx);
      },
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
        this.responses.clear();
      },
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
    /** Closes every listening socket (or the server's one, before it listened). */
    stopAccepting(this: GatewayService): void {
      if (this.acceptors) this.acceptors.stopAccepting();
      else if (this.server.listening) this.server.close();
    },

    specOf(req: Req): RouteSpec | undefined {
      const action = req.$alias?.action;
      return action ? routeByAction.get(action) : undefined;
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
      if (spec.auth === "none") return null;
      if (spec.auth === "bearer") {
        const token = bearerToken(req.headers.authorization);
        if (!token) throw new NotAuthenticatedError();
        if (token.length > MAX_TOKEN_LENGTH) throw new TokenInvalidError("jwt malformed");
        return callerOfBearer(
          {
            tokens: this.tokens,
            activeUsers: this.activeUsers,
            config: this.config,
            askAuth: (t, ignore) =>
              call(ctx, "auth.verifyAccessToken", { token: t, ignore_expiration: ignore }),
          },
          token,
          spec.acceptExpiredToken ?? false,
          Date.now(),
        );
      }
      const key = req.headers["x-api-key"];
      if (typeof key !== "string" || key === "") throw new NotAuthenticatedError();
      const verified = await call(ctx, "auth.verifyApiKey", { key, scope: spec.apiKeyScope ?? "app" });
      (ctx.meta as { apiKey?: { key_id: string } }).apiKey = { key_id: verified.key_id };
      return null;
    },

    /**
     * Runs after authentication: turns path, query and body into the action's parameters. (moleculer-web
     * has no later hook before the call, and reading bodies only after authentication is the point.)
     */
    async authorize(
      this: GatewayService,
      ctx: Context<unknown, AuthMeta>,
      _route: unknown,
      req: Req,
    ): Promise<void> {
      const spec = this.specOf(req);
      if (!spec) return;
      await this.limitRate(ctx, req, spec);
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
      if (spec.body === "multipart") {
        req.$params = { ...path, ...(await this.readUpload(ctx, req, String(path.store_id))) };
        return;
      }
      let body: Record<string, unknown> = {};
      if (spec.body === "json-object" || spec.body === "json-object-or-null") {
        const raw = await readRaw(req, this.config.requestBodyLimitBytes, this.bodyBounds(req));
        body = parseJsonBody(raw, spec.body);
      }
      req.$params = { ...body, ...headers, ...query, ...path };
    },

    /**
     * The store-event upload: permission first (an outsider's 10 MB are never read), then the multipart
     * body, its picture streamed to the stores service as it arrives.
     */
    async readUpload(this: GatewayService, ctx: Context<unknown, AuthMeta>, req: Req, storeId: string) {
      const userId = ctx.meta.user?.id;
      if (!userId) throw new NotAuthenticatedError();
      await call(ctx, "stores.checkEventPermission", { store_id: storeId, user_id: userId });
      const release = this.uploads.take(userId);
      try {
        return await this.receiveUpload(ctx, req);
      } finally {
        release();
      }
    },

    /** The multipart body, its picture streamed to the stores service as it arrives. */
    async receiveUpload(this: GatewayService, ctx: Context<unknown, AuthMeta>, req: Req) {
      const form = await readEventMultipart(
        req,
        { fileBytes: this.config.pictureMaxBytes, fields: 40, fieldBytes: 64 * 1024 },
        (file) =>
          sendInChunks(file, {
            begin: () => ctx.call("stores.stageBegin", {}),
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
      const budget = requestBudgetMs(this.config, isUploadRequest(req.method, req.url));
      return { idleMs: this.config.httpBodyIdleTimeoutMs, deadline: (req.$arrivedAt ?? Date.now()) + budget };
    },

    /** RATE_LIMITS, per caller: the user, else the API key, else the client address. */
    async limitRate(
      this: GatewayService,
      ctx: Context<unknown, AuthMeta>,
      req: Req,
      spec: RouteSpec,
    ): Promise<void> {
      if (!this.counters) return;
      const meta = ctx.meta as AuthMeta & { apiKey?: { key_id: string } };
      const forwarded = this.config.trustProxy
        ? String(req.headers["x-forwarded-for"] ?? "")
            .split(",")[0]
            .trim()
        : "";
      const caller = meta.user
        ? `user:${meta.user.id}`
        : meta.apiKey
          ? `key:${meta.apiKey.key_id}`
          : `ip:${forwarded || req.socket.remoteAddress || "unknown"}`;
      try {
        await enforceLimit(this.counters, this.limits, spec.action, caller);
      } catch (err) {
        if (err instanceof RateLimitedError) throw err;
        // The counter store is down: serve rather than refuse everyone.
        this.logger.warn("Rate limit store unavailable; request allowed", err);
      }
    },

    sendJson(res: Res, status: number, body: unknown, headers: Record<string, string> = {}) {
      writeJson(res, status, JSON.stringify(body), headers);
    },

    /**
     * Overrides moleculer-web's (a bare JSON.stringify): with the length known, Node need not frame the
     * answer in chunks. A microcached read's 200 is kept for the time its service allows.
     */
    encodeResponse(this: GatewayService, req: Req, res: Res, data: unknown): string | Buffer {
      const json = data instanceof RawJson ? data.bytes : JSON.stringify(data);
      res.setHeader("Content-Length", Buffer.byteLength(json));
      this.keepAnswer(req, res, json);
      return json;
    },

    /**
     * Overrides moleculer-web's for an answer already JSON (a RawJson) when nothing else is asked of the
     * answer (status, headers, type): its parts are written as they are, never joined into one buffer.
     */
    sendResponse(this: GatewayService, req: Req, res: Res, data: unknown, action?: ActionLike): unknown {
      if (data instanceof RawJson && plainJsonAnswer(req, res, action)) {
        this.keepAnswer(req, res, data.parts);
        writeJson(res, 200, data.parts);
        return undefined;
      }
      return apiGatewaySendResponse.call(this, req, res, data, action);
    },

    /** A microcached read's 200 is kept for the time its service allows (ctx.meta.$freshUntil). */
    keepAnswer(this: GatewayService, req: Req, res: Res, json: JsonBody): void {
      const slot = req.$microcache;
      const meta = req.$ctx?.meta as FreshnessMeta | undefined;
      const freshUntil = slot?.untilEvent ? null : meta?.$freshUntil;
      if (slot && res.statusCode === 200 && freshUntil !== undefined) {
        const now = Date.now();
        this.responses.set(slot.tag, slot.key, json, freshUntil ?? Number.POSITIVE_INFINITY, now);
      }
    },

    /**
     * Overrides moleculer-web's: a read marked for the microcache is answered from it when this caller's
     * answer is still fresh (after authentication and rate limiting, which have run by now).
     */
    async callAction(
      this: GatewayService,
      route: unknown,
      actionName: string,
      req: Req,
      res: Res,
      params: Record<string, unknown>,
    ): Promise<unknown> {
      const slot = this.microcacheSlot(req, params);
      if (slot) {
        const json = this.responses.get(slot.tag, slot.key, Date.now());
        if (json !== null) {
          writeJson(res, 200, json);
          return true;
        }
        req.$microcache = slot;
      }
      if (this.takesRawJson && req.$ctx) (req.$ctx.meta as RawJsonMeta).$rawJson = actionName;
      return apiGatewayCallAction.call(this, route, actionName, req, res, params);
    },

    microcacheSlot(this: GatewayService, req: Req, params: Record<string, unknown>): MicrocacheSlot | null {
      if (!this.responses.enabled) return null;
      const spec = this.specOf(req);
      const userId = (req.$ctx?.meta as AuthMeta | undefined)?.user?.id;
      if (!spec?.microcacheTag || !userId) return null;
      const untilEvent = spec.microcacheTag === CALLER_TAG;
      const tag = untilEvent ? callerTag(userId) : params[spec.microcacheTag];
      if (typeof tag !== "string") return null;
      return { tag, key: `${spec.action}\u0000${userId}\u0000${JSON.stringify(params)}`, untilEvent };
    },

    /**
     * Overrides moleculer-web's: an error escaping this promise is tagged with its request id, so the
     * crash log names the request (shared/runtime/crash); from Node 24 each request also runs in its own
     * request context (shared/runtime/request-context), which names it for detached callbacks too.
     */
    httpHandler(this: GatewayService, req: Req, res: Res, next?: unknown): Promise<unknown> {
      return withinRequest({ requestID: () => requestIdOf(req) }, () =>
        apiGatewayHttpHandler.call(this, req, res, next).catch((err: unknown) => {
          if (err !== null && typeof err === "object" && !("requestID" in err)) {
            (err as { requestID?: string }).requestID = requestIdOf(req);
          }
          throw err;
        }),
      );
    },

    /**
     * Overrides moleculer-web's, which logs every non-4xx error with its stack before mapping it. Never
     * throws: an error answer that cannot be built becomes a fixed 500 (or, once headers are out, a
     * closed connection).
     */
    errorHandler(this: GatewayService, req: Req, res: Res, err: unknown) {
      try {
        this.sendError(req, res, err);
      } catch (failure) {
        this.logger.error("Error answer failed", { url: req.url, requestID: requestIdOf(req) }, failure);
        try {
          if (!res.headersSent) writeJson(res, 500, FALLBACK_ERROR_JSON);
          else res.destroy();
        } catch {
          req.socket?.destroy();
        }
      }
    },

    /** Overrides moleculer-web's: every error leaves here in the spec's shape. */
    sendError(this: GatewayService, req: Req, res: Res, err: unknown) {
      if (res.headersSent) return;
      const mapped = toHttpError(err, this.specOf(req));
      if (this.tracing) req.$errorType = errorTypeOf(err);
      if (!req.complete && mapped.status >= 400) {
        // The body was not read to its end (an early 401, a 413 cutting an upload off): answer, then
        // drain the rest so a client still sending reads the answer instead of a broken pipe; a body
        // still arriving after two seconds (a huge upload) is cut off by closing the connection.
        // (No "Connection: close": Node would then close the socket as soon as the answer is out.)
        res.once("finish", () => {
          // A body that timed out is not waited for: its client has stopped sending.
          if (mapped.status === 408) {
            req.socket?.destroy();
            return;
          }
          req.resume();
          setTimeout(() => {
            if (!req.complete) req.socket?.destroy();
          }, 2000).unref();
        });
      }
      const where = { method: req.method, url: req.url?.slice(0, 2048), requestID: requestIdOf(req) };
      const encoded = encodeHttpError(mapped);
      if (mapped.unexpected) this.logger.error("Unexpected error", where, err);
      else if (encoded.fallback) this.logger.error("Error answer could not be encoded", where, err);
      else if (mapped.status >= 500)
        this.logger.warn(`${mapped.status} ${String(mapped.body.detail)}`, where);
      writeJson(res, encoded.status, encoded.json, encoded.fallback ? {} : mapped.headers);
    },

    /** No route matched: 405 with Allow when the path exists under another method, else 404. */
    send404(this: GatewayService, req: Req, res: Res) {
      const url = req.parsedUrl ?? (req.url ?? "/").split("?")[0];
      // A path moleculer-web cannot decode (a malformed escape) matches no alias.
      const matches = (a: AliasLike) => {
        try {
          return a.match(url) !== false;
        } catch {
          return false;
        }
      };
      const allowed = [...new Set(this.aliases.filter(matches).map((a) => a.method))];
      if (allowed.length > 0) {
        this.sendJson(res, 405, { detail: "Method Not Allowed" }, { Allow: allowed.join(", ") });
      } else {
        this.sendJson(res, 404, { detail: "Not Found" });
      }
    },
  },

  created(this: GatewayService) {
    this.config = serviceConfig(this);
    this.tracing = this.broker.isTracingEnabled();
    this.limits = parseLimits(this.config.rateLimits);
    this.counters =
      this.limits.size === 0
        ? null
        : this.config.cacher.startsWith("redis://")
          ? new RedisCounterStore(this.config.cacher, `${this.config.namespace || "rounds"}-ratelimit`)
          : new MemoryCounterStore();
    this.tokens = new TokenCache(this.config.authCacheSeconds * 1000, 10_000);
    this.activeUsers = new LocalCache(this.config.authCacheSeconds * 1000, 100_000);
    this.responses = new ResponseCache(this.config.responseCacheMs, 10_000);
    this.takesRawJson = this.config.transporter === "" || this.config.serializer === "Hybrid";
    this.openApi = buildOpenApi(routes, this.config.publicUrl);
    this.uploads = new UploadSlots(this.config.uploadsMax, this.config.uploadsMaxPerCaller);
    this.server = http.createServer(httpServerOptions(this.config), this.express());
    this.server.on("error", (err) => this.logger.error("HTTP server error", err));
    // What Node's HTTP parser refuses is answered in the spec's shape too (gateway/client-error).
    this.server.on("clientError", answerClientError);
    this.drain = new HttpDrain(this.server, () => this.stopAccepting());
    this.beginDrain = () => this.drain.begin();
  },

  async started(this: GatewayService) {
    // Several listening sockets (gateway/acceptors), so a burst of new connections is not accepted one
    // per event-loop turn.
    this.acceptors = await openAcceptors(
      this.server,
      this.config.port,
      this.config.host,
      this.config.httpAcceptors,
    );
    const address = this.server.address();
    if (address && typeof address === "object") {
      this.logger.info(`API Gateway listening on http://${address.address}:${address.port}`);
    }
    // The stop begins: take no new connections while Moleculer waits for the requests in flight.
    this.broker.localBus.on(STOPPING_EVENT, this.beginDrain);
  },

  // Runs before moleculer-web's own `stopped` (lifecycle handlers of mixins run in reverse on stop),
  // which then finds the server closed already.
  async stopped(this: GatewayService) {
    this.broker.localBus.off(STOPPING_EVENT, this.beginDrain);
    await this.drain.end(CONNECTION_CLOSE_MS);
    await this.counters?.close();
  },
};

export default GatewayServiceSchema;
