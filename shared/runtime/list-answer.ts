/**
 * Answers that grow with their data (a user's friends or payments, a round's participants) leave a
 * service whole, as the spec has them, yet never as one packet larger than a page
 * (shared/contracts/paging): one that fits is answered as it is (or, for the gateway, as its JSON bytes);
 * a larger one as a stream of its JSON in chunks, each its own packet, which moleculer-web writes to the
 * client as they come (with Content-Type and Content-Length from the meta).
 */
import { Readable } from "node:stream";
import type { Context } from "moleculer";
import { PAGE_BYTES } from "../contracts/paging";
import { RawJson, type RawJsonMeta } from "./raw-json";

/** The bytes of one chunk of a streamed answer (below Moleculer's own 256 KiB chunk bound). */
export const STREAM_CHUNK_BYTES = 64 * 1024;

export interface StreamAnswerMeta extends RawJsonMeta {
  $responseType?: string;
  $responseHeaders?: Record<string, string>;
}

function* chunksOf(parts: readonly Buffer[], size: number): Generator<Buffer> {
  for (const part of parts) for (let i = 0; i < part.length; i += size) yield part.subarray(i, i + size);
}

/** JSON bytes (in parts) as a streamed answer. */
export function streamedJson(ctx: Context<unknown, StreamAnswerMeta>, json: RawJson): Readable {
  ctx.meta.$responseType = "application/json; charset=utf-8";
  ctx.meta.$responseHeaders = { "Content-Length": String(json.byteLength) };
  return Readable.from(chunksOf(json.parts, STREAM_CHUNK_BYTES), { objectMode: false });
}

/** JSON bytes: as they are when they fit one packet, else streamed. */
export function bytesAnswer(ctx: Context<unknown, StreamAnswerMeta>, json: RawJson): RawJson | Readable {
  return json.byteLength <= PAGE_BYTES ? json : streamedJson(ctx, json);
}

/**
 * A value that may be large: encoded only when `mayBeLarge` (so small answers cost nothing extra), then
 * answered as bytes (to the action the gateway names in `$rawJson`), as the value, or streamed.
 */
export function valueAnswer<T>(
  ctx: Context<unknown, StreamAnswerMeta>,
  action: string,
  value: T,
  mayBeLarge = true,
): T | RawJson | Readable {
  if (!mayBeLarge) return value;
  const json = new RawJson(Buffer.from(JSON.stringify(value)));
  if (json.byteLength > PAGE_BYTES) return streamedJson(ctx, json);
  return ctx.meta.$rawJson === action ? json : value;
}
