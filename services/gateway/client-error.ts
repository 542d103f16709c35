/**
 * Requests Node's HTTP parser refuses before any route sees them (control characters in the request
 * line or a header, headers over 16 KB, a broken request line) are answered in the spec's shape too:
 * Node's own answer to them is a bare status line without a body.
 */
import type { Duplex } from "node:stream";

const answers: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, "Request Header Fields Too Large"],
  ERR_HTTP_REQUEST_TIMEOUT: [408, "Request Timeout"],
};

export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  try {
    if (err.code === "ECONNRESET" || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, text] = answers[err.code ?? ""] ?? [400, "Bad Request"];
    const body = JSON.stringify({ detail: text });
    socket.end(
      `HTTP/1.1 ${status} ${text}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `X-Content-Type-Options: nosniff\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  } catch {
    socket.destroy();
  }
}
