/** Writing an answer already encoded as JSON, with its length known (no chunked framing). */
import type { ServerResponse } from "node:http";

/** An answer's JSON: text, bytes, or bytes in parts written one after the other. */
export type JsonBody = string | Buffer | readonly Buffer[];

export const byteLengthOf = (json: JsonBody): number =>
  typeof json === "string" || Buffer.isBuffer(json)
    ? Buffer.byteLength(json)
    : json.reduce((sum, part) => sum + part.length, 0);

/**
 * Headers and body in one go. Parts are written in turn: Node corks the socket for a response's writes
 * within a tick, so they still leave in one system call. `bytes`, when the caller knows it, spares
 * counting a text body's UTF-8 bytes again (a kept answer's is counted once, when kept).
 */
export function writeJson(
  res: ServerResponse,
  status: number,
  json: JsonBody,
  headers: Record<string, string> = {},
  bytes: number = byteLengthOf(json),
): void {
  res.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": bytes,
    ...headers,
  });
  if (typeof json === "string" || Buffer.isBuffer(json)) {
    res.end(json);
    return;
  }
  for (let i = 0; i < json.length - 1; i++) res.write(json[i]);
  res.end(json[json.length - 1]);
}
