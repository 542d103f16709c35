/**
 * Which client request ids the gateway takes (decision 0063). The id goes into every log line and span
 * of the request and into every packet it sends between services, so it must not grow with what a
 * client sends (a header may hold 16 KB), nor carry spaces or bytes that a log reader or a header would
 * garble. Anything else is dropped, and the request gets an id of Moleculer's making.
 */
export const MAX_REQUEST_ID_LENGTH = 128;

const acceptable = new RegExp(`^[\\x21-\\x7e]{1,${MAX_REQUEST_ID_LENGTH}}$`);

/** The client's X-Request-ID (or X-Correlation-ID), if it is 1 to 128 visible ASCII characters. */
export function clientRequestId(value: unknown): string | undefined {
  return typeof value === "string" && acceptable.test(value) ? value : undefined;
}
