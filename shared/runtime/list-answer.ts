/**
 * Answers that grow with their data (a user's friends or payments, a round's participants) leave a
 * service whole, as the spec has them, yet never as one packet larger than a page
 * (shared/contracts/paging): one that fits is answered as the value it is; a larger one as a stream of
 * its JSON in chunks, each its own packet, which moleculer-web writes to the client as they come (with
 * Content-Type and Content-Length from the meta, moleculer-web's documented `$responseType` and
 * `$responseHeaders`).
 */
import { Readable } from "node:stream";
import type { Context } from "moleculer";
import { PAGE_BYTES } from "../contracts/paging";

/** The bytes of one chunk of a streamed answer (below Moleculer's own 256 KiB chunk bound). */
export const STREAM_CHUNK_BYTES = 64 * 1024;

export interface StreamAnswerMeta {
  $responseType?: string;
  $responseHeaders?: Record<string, string>;
}

function* chunksOf(json: Buffer, size: number): Generator<Buffer> {
  for (let i = 0; i < json.length; i += size) yield json.subarray(i, i + size);
}

/** JSON bytes as a streamed answer. */
export function streamedJson(ctx: Context<unknown, StreamAnswerMeta>, json: Buffer): Readable {
  ctx.meta.$responseType = "application/json; charset=utf-8";
  ctx.meta.$responseHeaders = { "Content-Length": String(json.length) };
  return Readable.from(chunksOf(json, STREAM_CHUNK_BYTES), { objectMode: false });
}

/**
 * A value that may be large: measured only when `mayBeLarge` (so small answers cost nothing extra), then
 * answered as the value, or streamed when its JSON is longer than a page.
 */
export function valueAnswer<T>(
  ctx: Context<unknown, StreamAnswerMeta>,
  value: T,
  mayBeLarge = true,
): T | Readable {
  if (!mayBeLarge) return value;
  const json = Buffer.from(JSON.stringify(value));
  return json.length > PAGE_BYTES ? streamedJson(ctx, json) : value;
}
