/**
 * How the gateway answers an error (moleculer-web's documented `onError`) and a request no route takes
 * (the handler's `next`): always in the spec's shape, never throwing. The mapping itself is
 * gateway/http-errors.ts.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { LoggerInstance } from "moleculer";
import { isOwnErrorType } from "../../shared/errors";
import { encodeHttpError, FALLBACK_ERROR_JSON, toHttpError } from "./http-errors";
import type { RouteSpec } from "./routes";
import { writeJson } from "./write-json";
import type { AllowedMethods } from "./allowed-methods";

/** How long an unread body may still arrive after its error was answered, before the connection is cut. */
const DRAIN_MS = 2000;

export interface ErrorAnswerContext {
  logger: LoggerInstance;
  spec: RouteSpec | undefined;
  requestID: string | undefined;
  /** Tracing on: the error's type is kept on the request for its span. */
  tracing: boolean;
}

type Req = IncomingMessage & { $errorType?: string };

/** What a request's span calls the error answered: the AppError type constant, else the error's name. */
function errorTypeOf(err: unknown): string {
  const e = (err ?? {}) as { type?: unknown; name?: unknown };
  if (typeof e.type === "string" && e.type) return e.type;
  return typeof e.name === "string" && e.name ? e.name : "Error";
}

/**
 * Answers `err` in the spec's shape. Never throws: an answer that cannot be built becomes a fixed 500
 * (or, once headers are out, a closed connection).
 */
export function answerError(req: Req, res: ServerResponse, err: unknown, c: ErrorAnswerContext): void {
  try {
    writeError(req, res, err, c);
  } catch (failure) {
    c.logger.error("Error answer failed", { url: req.url, requestID: c.requestID }, failure);
    try {
      if (!res.headersSent) writeJson(res, 500, FALLBACK_ERROR_JSON);
      else res.destroy();
    } catch {
      req.socket?.destroy();
    }
  }
}

function writeError(req: Req, res: ServerResponse, err: unknown, c: ErrorAnswerContext): void {
  if (res.headersSent) return;
  const mapped = toHttpError(err, c.spec);
  if (c.tracing) req.$errorType = errorTypeOf(err);
  if (!req.complete && mapped.status >= 400) {
    // The body was not read to its end (an early 401, a 413 cutting an upload off): answer, then drain
    // the rest so a client still sending reads the answer instead of a broken pipe; a body still
    // arriving after DRAIN_MS (a huge upload) is cut off by closing the connection. A body that timed
    // out (408) is not waited for: its client has stopped sending.
    // (No "Connection: close": Node would then close the socket as soon as the answer is out.)
    res.once("finish", () => {
      if (mapped.status === 408) {
        req.socket?.destroy();
        return;
      }
      req.resume();
      setTimeout(() => {
        if (!req.complete) req.socket?.destroy();
      }, DRAIN_MS).unref();
    });
  }
  const where = { method: req.method, url: req.url?.slice(0, 2048), requestID: c.requestID };
  const encoded = encodeHttpError(mapped);
  if (mapped.unexpected) c.logger.error("Unexpected error", where, err);
  else if (encoded.fallback) c.logger.error("Error answer could not be encoded", where, err);
  else if (mapped.status >= 500 && !isOwnErrorType((err as { type?: unknown } | null)?.type)) {
    // Which failure it was (a node not available, a call lost, a timeout), for the operator: the
    // answer's detail is the same for all of them.
    const cause = `${errorTypeOf(err)}: ${String((err as { message?: unknown } | null)?.message ?? "")}`;
    c.logger.warn(`${mapped.status} ${String(mapped.body.detail)}`, { ...where, cause: cause.slice(0, 300) });
  }
  writeJson(res, encoded.status, encoded.json, encoded.fallback ? {} : mapped.headers);
}

/** No route took the request: 405 with Allow when the path exists under another method, else 404. */
export function answerNotRouted(
  req: IncomingMessage & { parsedUrl?: string },
  res: ServerResponse,
  allowedMethods: AllowedMethods,
) {
  const url = req.parsedUrl ?? (req.url ?? "/").split("?")[0];
  const allowed = allowedMethods(url);
  if (allowed.length > 0) {
    writeJson(res, 405, JSON.stringify({ detail: "Method Not Allowed" }), { Allow: allowed.join(", ") });
  } else {
    writeJson(res, 404, JSON.stringify({ detail: "Not Found" }));
  }
}
