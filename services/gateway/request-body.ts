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

/**
 * A body without its UTF-8 byte order mark, if it starts with one. RFC 8259 lets a parser ignore it, and
 * FastAPI's does (Python's `json.loads` of bytes): a JSON file saved by an editor that writes one and
 * sent as it is parses there, so it does here.
 */
export function withoutBom(raw: Buffer): Buffer {
  return raw.length >= 3 && raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf ? raw.subarray(3) : raw;
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
export function parseJsonBody(body: Buffer, kind: BodyKind): Record<string, unknown> {
  const raw = withoutBom(body);
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

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Bytes scanned between turns of the event loop, and list items parsed at once. */
const SCAN_SLICE = 4 * 1024 * 1024;
const ITEMS_AT_ONCE = 10_000;

/**
 * A large JSON object whose bulk is one top-level list (a multicast's `user_ids`), parsed without
 * holding the event loop for long: `JSON.parse` of the whole text holds it for longer than other nodes
 * wait before they give up on a silent process (measured in decision 0032; the wait: decision
 * 0042). The bytes are scanned a slice at a time for the list; its items are parsed ITEMS_AT_ONCE at a
 * time, the rest of the object with the list left out, a turn of the event loop between each. Resolves
 * to null when the body is anything this does not expect (any top-level name escaped, the key given
 * twice, the value not a list, malformed or too deep JSON): then `parseJsonBody` reads it in one piece
 * and gives any error its usual 422.
 */
export async function parseListBody(body: Buffer, key: string): Promise<Record<string, unknown> | null> {
  const raw = withoutBom(body);
  const keyBytes = Buffer.from(JSON.stringify(key));
  let depth = 0;
  let inString = false;
  let stringStart = -1;
  let lastString: [number, number] | null = null; // the last string closed at depth 1
  let expectList = false;
  let listStart = -1;
  let listEnd = -1;
  let itemStart = -1;
  let itemsInSlice = 0;
  let seenKey = false;
  const items: unknown[] = [];
  const parseItems = (from: number, to: number): boolean => {
    const text = raw.toString("utf8", from, to);
    if (text.trim() === "") return from === to && items.length === 0 && itemsInSlice === 0;
    try {
      for (const item of JSON.parse(`[${text}]`) as unknown[]) items.push(item);
      return true;
    } catch {
      return false;
    }
  };
  for (let i = 0; i < raw.length; i++) {
    if (i % SCAN_SLICE === SCAN_SLICE - 1) await nextTurn();
    const b = raw[i];
    if (inString) {
      if (b === 0x5c) i++;
      else if (b === 0x22) {
        inString = false;
        if (depth === 1) lastString = [stringStart, i + 1];
      }
      continue;
    }
    if (b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09) continue;
    if (expectList) {
      if (b !== 0x5b) return null; // the key's value is not a list
      expectList = false;
      listStart = i;
      itemStart = i + 1;
    }
    if (b === 0x22) {
      inString = true;
      stringStart = i;
    } else if (b === 0x3a && depth === 1 && lastString) {
      const name = raw.subarray(lastString[0], lastString[1]);
      // An escaped name may spell the key: JSON.parse would then keep whichever of the two comes last.
      if (name.includes(0x5c)) return null;
      if (name.equals(keyBytes)) {
        if (seenKey) return null; // given twice: JSON.parse keeps the last
        seenKey = true;
        expectList = true;
      }
    } else if (b === 0x5b || b === 0x7b) {
      depth++;
      if (depth > MAX_JSON_DEPTH) return null;
    } else if (b === 0x5d || b === 0x7d) {
      depth--;
      if (depth === 1 && listStart >= 0 && listEnd < 0) {
        listEnd = i;
        if (!parseItems(itemStart, i)) return null;
      }
    } else if (
      b === 0x2c &&
      depth === 2 &&
      listStart >= 0 &&
      listEnd < 0 &&
      ++itemsInSlice === ITEMS_AT_ONCE
    ) {
      if (!parseItems(itemStart, i)) return null;
      itemStart = i + 1;
      itemsInSlice = 0;
      await nextTurn();
    }
  }
  if (listEnd < 0) return null;
  let rest: unknown;
  try {
    rest = JSON.parse(
      Buffer.concat([raw.subarray(0, listStart), Buffer.from("[]"), raw.subarray(listEnd + 1)]).toString(
        "utf8",
      ),
    );
  } catch {
    return null;
  }
  if (rest === null || typeof rest !== "object" || Array.isArray(rest)) return null;
  (rest as Record<string, unknown>)[key] = items;
  return rest as Record<string, unknown>;
}
