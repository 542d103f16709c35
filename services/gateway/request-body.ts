/**
 * Reads and checks a JSON request body after authentication (so an unauthenticated request is refused
 * before its body is even read, and a bad body never beats a 401). Size-limited; malformed JSON and a
 * body of the wrong kind are 422 in FastAPI's shape.
 */
import type { IncomingMessage } from "node:http";
import { PayloadTooLargeError, RequestValidationError } from "../../shared/errors";
import { watchBody, type BodyBounds } from "./body-watch";
import { jsonErrorPosition } from "./json-error-position";
import type { BodyKind } from "./routes";

export function readRaw(req: IncomingMessage, limit: number, bounds?: BodyBounds): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new PayloadTooLargeError(`Request body too large (limit ${limit} bytes)`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.off("data", onData);
        req.pause();
        reject(new PayloadTooLargeError(`Request body too large (limit ${limit} bytes)`));
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("end", () => resolve(Buffer.concat(chunks)));
    req.once("error", reject);
    if (bounds) {
      watchBody(req, bounds, (err) => {
        req.off("data", onData);
        reject(err);
      });
    }
  });
}

function jsonError(text: string): RequestValidationError {
  return new RequestValidationError([
    { type: "json_invalid", loc: ["body", jsonErrorPosition(text)], msg: "JSON decode error", input: {} },
  ]);
}

/**
 * The deepest nesting a JSON body may have. The API's bodies are objects of scalars and lists (depth 2
 * or 3); the bound is checked on the raw bytes before JSON.parse, so nothing recursive (the parser,
 * ajv, the broker's serializer, an error answer echoing the input) ever meets a deeper value.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * Where a JSON text first opens a container deeper than `limit` (a byte offset), or -1. Counts brackets
 * outside strings, iteratively; a malformed text is the parser's to report, this only bounds depth.
 * (UTF-8 continuation bytes are never below 0x80, so scanning bytes cannot mistake them for quotes.)
 */
export function tooDeepAt(raw: Buffer, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    const b = raw[i];
    if (inString) {
      if (b === 0x5c)
        i++; // backslash: skip the escaped byte
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) {
      inString = true;
    } else if (b === 0x5b || b === 0x7b) {
      depth++;
      if (depth > limit) return i;
    } else if (b === 0x5d || b === 0x7d) {
      depth--;
    }
  }
  return -1;
}

/**
 * The body as the action's parameters: an object's fields, or nothing for a `null` body where the route
 * allows one. Anything else is the spec's 422.
 */
export function parseJsonBody(raw: Buffer, kind: BodyKind): Record<string, unknown> {
  const text = raw.toString("utf8");
  if (text.trim() === "") {
    throw new RequestValidationError([
      { type: "missing", loc: ["body"], msg: "Field required", input: null },
    ]);
  }
  const deepAt = tooDeepAt(raw);
  if (deepAt >= 0) {
    throw new RequestValidationError([
      {
        type: "json_too_deep",
        // A character offset, as json_invalid reports one.
        loc: ["body", raw.subarray(0, deepAt).toString("utf8").length],
        msg: `JSON nested deeper than ${MAX_JSON_DEPTH} levels`,
      },
    ]);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw jsonError(text);
  }
  if (value === null && kind === "json-object-or-null") return {};
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new RequestValidationError([
      {
        type: "model_attributes_type",
        loc: ["body"],
        msg: "Input should be a valid dictionary or object to extract fields from",
        input: value,
      },
    ]);
  }
  return value as Record<string, unknown>;
}
