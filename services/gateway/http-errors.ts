/**
 * The one place where errors become HTTP responses in the spec's shapes: `{"detail": "..."}`, or for 422
 * `{"detail": [{type, loc, msg, input}]}`. Errors are recognised by `code` and `type`, which survive the
 * transporter; anything unrecognised is a 500 with a generic detail (the caller logs the real error).
 */
import { ErrorType, type ValidationIssue } from "../../shared/errors";
import { originOf, type RouteSpec } from "./routes";

export interface HttpError {
  status: number;
  body: { detail: string | ValidationIssue[] };
  headers?: Record<string, string>;
  /** True when the error is a fault of ours and must be logged. */
  unexpected?: boolean;
}

interface ErrorLike {
  code?: unknown;
  type?: unknown;
  message?: unknown;
  data?: unknown;
}

const heads = new Set(["path", "query", "header", "body"]);
const ownTypes = new Set<string>(Object.values(ErrorType));

/** FastAPI's entry shape, keys in its order; `loc` gains its "path"/"query"/"body" head. */
export function toFastApiIssues(issues: ValidationIssue[], spec: RouteSpec | undefined): ValidationIssue[] {
  return issues.map((i) => {
    // Issues raised by the gateway itself (body parsing) already carry their head.
    const loc = heads.has(String(i.loc[0])) ? i.loc : [originOf(spec, i.loc[0]), ...i.loc];
    const out: ValidationIssue = { type: i.type, loc, msg: i.msg };
    // FastAPI reports a missing path or query parameter with input null (a body field: the body).
    const missingParam =
      i.type === "missing" && (loc[0] === "query" || loc[0] === "path" || loc[0] === "header");
    if ("input" in i) out.input = i.input === undefined || missingParam ? null : i.input;
    return out;
  });
}

const detail = (status: number, text: string, headers?: Record<string, string>): HttpError => ({
  status,
  body: { detail: text },
  headers,
});

export function toHttpError(err: unknown, spec?: RouteSpec): HttpError {
  const e = (err ?? {}) as ErrorLike;
  const code = typeof e.code === "number" ? e.code : 0;
  const type = typeof e.type === "string" ? e.type : "";
  const message = typeof e.message === "string" ? e.message : "";

  if (code === 422 && Array.isArray(e.data)) {
    return { status: 422, body: { detail: toFastApiIssues(e.data as ValidationIssue[], spec) } };
  }
  if (ownTypes.has(type) && code >= 400 && code < 600) {
    const headers: Record<string, string> = {};
    if (code === 401 && spec?.auth === "bearer") headers["WWW-Authenticate"] = "Bearer";
    const retryAfter = (e.data as { retryAfter?: number } | undefined)?.retryAfter;
    if (code === 429 && retryAfter) headers["Retry-After"] = String(retryAfter);
    return detail(code, message, Object.keys(headers).length > 0 ? headers : undefined);
  }
  // Moleculer's and moleculer-web's own errors.
  switch (type) {
    case "SERVICE_NOT_FOUND":
    case "SERVICE_NOT_AVAILABLE":
    case "SERVICE_UNAVAILABLE": // moleculer-web, when no node serves the action
      return detail(503, "Service Unavailable", { "Retry-After": "1" });
    case "REQUEST_TIMEOUT":
    case "REQUEST_SKIPPED": // the call's time budget ran out before it was made
      return detail(504, "Gateway Timeout");
    case "RATE_LIMIT":
      return detail(429, "Too Many Requests");
    case "PAYLOAD_TOO_LARGE":
      return detail(413, "Request body too large");
    case "REQUEST_REJECTED":
    case "QUEUE_FULL":
      return detail(503, "Service Unavailable", { "Retry-After": "1" });
  }
  // Infrastructure errors without a known type (moleculer-web's ServiceUnavailableError has none).
  if (code === 503) return detail(503, "Service Unavailable", { "Retry-After": "1" });
  if (code === 504) return detail(504, "Gateway Timeout");
  return { ...detail(500, "Internal Server Error"), unexpected: true };
}
