/**
 * The OpenAPI 3.1 document, built at start from the route table and the very JSON Schemas the actions
 * validate with and the responses are typed by (never written by hand beside them).
 */
import type { TSchema } from "@sinclair/typebox";
import { ErrorBody, ValidationErrorBody } from "../../shared/contracts/http";
import { pathParamsOf, type RouteSpec } from "./routes";

type Json = Record<string, unknown>;

/** Plain JSON (TypeBox adds symbol keys; `Type.Unknown()` is `{}`, fine in 3.1). */
const plain = (schema: TSchema | object): Json => JSON.parse(JSON.stringify(schema)) as Json;

const errorText: Record<number, string> = {
  400: "Malformed request (multipart)",
  401: "Not authenticated, token or key invalid, or user removed",
  403: "Not enough permissions",
  404: "Not found",
  409: "Conflict",
  413: "Request body or file too large",
  415: "Unsupported content type",
  429: "Too Many Requests (RATE_LIMITS, or the limits per client address); see Retry-After",
  422: "Validation error",
  500: "Internal Server Error",
  503: "Service Unavailable",
  504: "Gateway Timeout",
  507: "Insufficient Storage: the store is full or cannot be written; nothing was saved",
};

/** Every operation's tag, declared once at the top of the document. */
const TAGS: { name: string; description: string }[] = [
  { name: "rounds", description: "Rounds: read one, join one" },
  { name: "auth", description: "Token refresh with rotation and reuse detection" },
  { name: "stores", description: "Store events (multipart upload)" },
  { name: "users", description: "The caller's friends and payments" },
  { name: "settings", description: "App settings by version and platform" },
  { name: "notifications", description: "Multicast push jobs" },
  { name: "media", description: "Uploaded pictures (outside the spec)" },
  { name: "operations", description: "Probes and keys for operators and other backends (outside the spec)" },
];

const toOpenApiPath = (path: string) => path.replace(/:([A-Za-z_]+)/g, "{$1}");

function parameters(route: RouteSpec): Json[] {
  const props = ((route.doc.params as Json | undefined)?.properties ?? {}) as Record<string, Json>;
  const required = new Set(((route.doc.params as Json | undefined)?.required ?? []) as string[]);
  const out: Json[] = pathParamsOf(route).map((name) => ({
    name,
    in: "path",
    required: true,
    schema: plain(props[name] ?? { type: "string" }),
  }));
  for (const name of route.query ?? []) {
    out.push({
      name,
      in: "query",
      required: required.has(name),
      schema: plain(props[name] ?? { type: "string" }),
    });
  }
  for (const [header, param] of Object.entries(route.headers ?? {})) {
    const name = header.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
    const schema = plain(props[param] ?? { type: "string" });
    const description = typeof schema.description === "string" ? { description: schema.description } : {};
    out.push({ name, in: "header", required: false, ...description, schema });
  }
  return out;
}

/** The body part of the action's params: everything that is not a path, query or header parameter. */
function bodySchema(route: RouteSpec): Json {
  const params = plain(route.doc.params ?? { type: "object" });
  const outside = new Set([
    ...pathParamsOf(route),
    ...(route.query ?? []),
    ...Object.values(route.headers ?? {}),
  ]);
  const props = Object.fromEntries(
    Object.entries((params.properties ?? {}) as Record<string, Json>).filter(([k]) => !outside.has(k)),
  );
  const required = ((params.required ?? []) as string[]).filter((k) => !outside.has(k));
  const body: Json = { type: "object", properties: props };
  if (required.length > 0) body.required = required;
  return route.body === "json-object-or-null" ? { anyOf: [body, { type: "null" }] } : body;
}

function requestBody(route: RouteSpec): Json | undefined {
  if (route.body === "multipart") {
    return {
      required: true,
      content: {
        "multipart/form-data": {
          schema: plain(route.doc.form ?? { type: "object" }),
          encoding: { main_picture: { contentType: "image/jpeg, image/png, image/webp" } },
        },
      },
    };
  }
  if (route.body === "none") return undefined;
  return { required: true, content: { "application/json": { schema: bodySchema(route) } } };
}

function responses(route: RouteSpec): Json {
  const { success } = route.doc;
  const ok: Json = { description: success.status === 202 ? "Accepted" : "Successful Response" };
  if (success.schema) ok.content = { "application/json": { schema: plain(success.schema) } };
  else if (success.contentType)
    ok.content = { [success.contentType]: { schema: { type: "string", format: "binary" } } };
  const out: Json = { [String(success.status)]: ok };
  const headersOf = (status: number): Json | undefined => {
    const documented = route.doc.responseHeaders?.[status];
    if (!documented) return undefined;
    return Object.fromEntries(
      Object.entries(documented).map(([name, description]) => [
        name,
        { description, schema: { type: "string" } },
      ]),
    );
  };
  const okHeaders = headersOf(success.status);
  if (okHeaders) ok.headers = okHeaders;
  // Every JSON body is size-limited (the route's bodyLimitBytes, else JSON_BODY_LIMIT_BYTES); every route may
  // meet a fault, a missing service, or a store that cannot be written (507: a read too, in the turn of a
  // failed write). RATE_LIMITS and the limits per client address may apply to any route (429, Retry-After).
  const general = [...(route.body.startsWith("json") ? [413] : []), 429, 500, 503, 504, 507];
  for (const status of [...new Set([...route.doc.errors, ...general])].sort()) {
    const headers = headersOf(status);
    out[String(status)] = {
      description: errorText[status] ?? "Error",
      ...(headers ? { headers } : {}),
      content: {
        "application/json": {
          schema: {
            $ref:
              status === 422 ? "#/components/schemas/ValidationErrorBody" : "#/components/schemas/ErrorBody",
          },
        },
      },
    };
  }
  return out;
}

function security(route: RouteSpec): Json[] | undefined {
  if (route.auth === "bearer") return [{ HTTPBearer: [] }];
  if (route.auth === "apiKey") return [{ APIKeyHeader: [] }];
  return [];
}

export function buildOpenApi(routeList: RouteSpec[], serverUrl: string): Json {
  const paths: Record<string, Json> = {};
  for (const route of routeList) {
    const operation: Json = {
      operationId: route.action.replace(".", "_"),
      summary: route.doc.summary,
      description: route.doc.description,
      tags: [route.doc.tag],
      parameters: parameters(route),
      responses: responses(route),
      security: security(route),
    };
    const body = requestBody(route);
    if (body) operation.requestBody = body;
    const p = toOpenApiPath(route.path);
    paths[p] = { ...(paths[p] ?? {}), [route.method.toLowerCase()]: operation };
  }
  paths["/health"] = {
    get: {
      operationId: "health",
      summary: "Liveness (outside the spec)",
      description:
        "200 once every service of this gateway's process has started. Never rate limited (a probe).",
      tags: ["operations"],
      security: [],
      responses: {
        "200": {
          description: "Every service of this process has started",
          content: {
            "application/json": {
              schema: { type: "object", properties: { status: { const: "ok" } }, required: ["status"] },
            },
          },
        },
        "503": {
          description: "Starting",
          content: {
            "application/json": {
              schema: { type: "object", properties: { status: { type: "string" } }, required: ["status"] },
            },
          },
        },
      },
    },
  };
  const readiness = {
    type: "object",
    properties: { status: { type: "string" }, checks: { type: "object" } },
    required: ["status", "checks"],
  };
  paths["/health/ready"] = {
    get: {
      operationId: "ready",
      summary: "Readiness: transporter, cacher, services and their stores (outside the spec)",
      description:
        "200 while this gateway should take traffic: the transporter, the cacher and every service behind a route (with its store) answer. Never rate limited (a probe).",
      tags: ["operations"],
      security: [],
      responses: {
        "200": { description: "Ready", content: { "application/json": { schema: readiness } } },
        "503": {
          description: "Not ready: the failing checks are named",
          content: { "application/json": { schema: readiness } },
        },
      },
    },
  };
  const jwk = {
    type: "object",
    properties: {
      kty: { const: "EC" },
      crv: { const: "P-256" },
      x: { type: "string" },
      y: { type: "string" },
      kid: { type: "string" },
      alg: { const: "ES256" },
      use: { const: "sig" },
    },
    required: ["kty", "crv", "x", "y", "kid", "alg", "use"],
    additionalProperties: false,
  };
  paths["/.well-known/jwks.json"] = {
    get: {
      operationId: "jwks",
      summary: "The public keys that verify access tokens, RFC 7517 (outside the spec)",
      description:
        "The JSON Web Key Set of the ES256 keys that sign access tokens, for any backend that verifies them itself.",
      tags: ["operations"],
      security: [],
      responses: {
        "200": {
          description:
            "The keys, each named by its kid (its RFC 7638 thumbprint); Cache-Control: max-age=300",
          content: {
            "application/json": {
              schema: {
                type: "object",
                properties: { keys: { type: "array", items: jwk } },
                required: ["keys"],
                additionalProperties: false,
              },
            },
          },
        },
        "429": {
          description: errorText[429],
          headers: { "Retry-After": { description: "Seconds to wait", schema: { type: "string" } } },
          content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorBody" } } },
        },
        "503": {
          description: "auth has not answered yet",
          content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorBody" } } },
        },
      },
    },
  };
  return {
    openapi: "3.1.0",
    info: {
      title: "Rounds, Store Events and Account Service Interface",
      version: "1.0.0",
      description:
        "Generated from the schemas the services validate with. See docs/decisions/README.md for every gap of the spec.",
      contact: { name: "Rounds platform maintainers" },
      // package.json's "UNLICENSED": not open source.
      license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
    },
    servers: [{ url: serverUrl || "/" }],
    tags: TAGS,
    paths,
    components: {
      schemas: { ErrorBody: plain(ErrorBody), ValidationErrorBody: plain(ValidationErrorBody) },
      securitySchemes: {
        HTTPBearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" },
        APIKeyHeader: { type: "apiKey", in: "header", name: "x-api-key" },
      },
    },
  };
}
