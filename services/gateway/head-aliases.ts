/**
 * HEAD wherever GET works (RFC 9110 §9.3.2): each `GET <path>` alias gets a `HEAD <path>` beside it, to
 * the same action or handler, so the answer's status and headers are the GET's. Node's HTTP server
 * writes no body for a HEAD request whatever the handler writes. The API document lists GET only, as
 * FastAPI's do.
 */
export function withHead<T>(aliases: Record<string, T>): Record<string, T> {
  const out: Record<string, T> = { ...aliases };
  for (const [key, target] of Object.entries(aliases)) {
    if (key.startsWith("GET ")) out[`HEAD ${key.slice(4)}`] ??= target;
  }
  return out;
}
