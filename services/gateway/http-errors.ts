/**
 * The one place where errors become HTTP responses in the spec's shapes: `{"detail": "..."}`, or for 422
 * `{"detail": [{type, loc, msg, input}]}`. Errors are recognised by `code` and `type`, which survive the
 * transporter; anything unrecognised is a 500 with a generic detail (the caller logs the real error).
 */
import { boundedInput, isOwnErrorType, MAX_ISSUES, type ValidationIssue } from "../../shared/errors";
import { INPUT_MAX_STRING } from "../../shared/errors/bounded-input";
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

/** A `loc` segment as sent: keys come from the client, so they are cut like echoed strings. */
const locSegment = (seg: unknown): string | number =>
  typeof seg === "number" ? seg : String(seg).slice(0, INPUT_MAX_STRING);

/**
 * FastAPI's entry shape, keys in its order; `loc` gains its "path"/"query"/"body" head. The echoed
 * `input` is bounded (bounded-input.ts): an answer never grows with, or breaks on, what was sent.
 */
export function toFastApiIssues(issues: ValidationIssue[], spec: RouteSpec | undefined): ValidationIssue[] {
  return issues
    .filter((i) => i !== null && typeof i === "object")
    .slice(0, MAX_ISSUES)
    .map((i) => {
      const given = Array.isArray(i.loc) ? i.loc.map(locSegment) : [];
      // Issues raised by the gateway itself (body parsing) already carry their head.
      const loc = heads.has(String(given[0])) ? given : [originOf(spec, given[0]), ...given];
      const out: ValidationIssue = { type: String(i.type), loc, msg: String(i.msg) };
      // FastAPI reports a missing path or query parameter with input null (a body field: the body).
      const missingParam =
        i.type === "missing" && (loc[0] === "query" || loc[0] === "path" || loc[0] === "header");
      if ("input" in i) out.input = i.input === undefined || missingParam ? null : boundedInput(i.input);
      return out;
    });
}

/** The answer of last resort: fixed bytes, for when mapping or encoding an error answer failed. */
export const FALLBACK_ERROR_JSON = '{"detail":"Internal Server Error"}';

/**
 * The JSON text of a mapped error; never throws. Should encoding fail anyway, the answer becomes a 500
 * with a fixed body (`fallback` true: the caller logs it).
 */
export function encodeHttpError(mapped: HttpError): { status: number; json: string; fallback: boolean } {
  try {
    return { status: mapped.status, json: JSON.stringify(mapped.body), fallback: false };
  } catch {
    return { status: 500, json: FALLBACK_ERROR_JSON, fallback: true };
  }
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
  if (isOwnErrorType(type) && code >= 400 && code < 600) {
    const headers: Record<string, string> = {};
    if (code === 401 && spec?.auth === "bearer") headers["WWW-Authenticate"] = "Bearer";
    const retryAfter = (e.data as { retryAfter?: number } | undefined)?.retryAfter;
    // 409: a retry that met its Idempotency-Key's first attempt still running (docs/decisions/0023).
    if ((code === 409 || code === 429 || code === 503) && retryAfter)
      headers["Retry-After"] = String(retryAfter);
    return detail(code, message, Object.keys(headers).length > 0 ? headers : undefined);
  }
  // Moleculer's and moleculer-web's own errors.
  switch (type) {
    case "UNABLE_DECODE_PARAM": // a path parameter with a malformed percent-escape (%ZZ): names nothing
      return detail(404, "Not Found");
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
  // NATS refused the call's packet (over the server's max_payload); its errors carry a string code.
  if (e.code === "MAX_PAYLOAD_EXCEEDED") return detail(413, "Request too large for the service to receive");
  // Infrastructure errors without a known type (moleculer-web's ServiceUnavailableError has none).
  if (code === 503) return detail(503, "Service Unavailable", { "Retry-After": "1" });
  if (code === 504) return detail(504, "Gateway Timeout");
  return { ...detail(500, "Internal Server Error"), unexpected: true };
}
