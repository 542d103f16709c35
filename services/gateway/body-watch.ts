/**
 * Bounds the time a request body may take to arrive: it may go at most `idleMs` without a byte from the
 * client, and must be in by `deadline`. A client that stalls (a bad network, or on purpose) thus gives
 * back what it holds: its connection, its upload slot and its staged picture.
 *
 * Progress is what the connection reads (its `bytesRead`), counted from the request's arrival
 * (gateway/http-bounds `markArrival`) when the gateway noted it: the client's silence while the gateway
 * authenticates before reading is the client's. Silence does not count while the gateway holds the body
 * back: when the request's buffer is full, Node stops reading the connection (backpressure, e.g. the
 * stores service still writing an upload's chunk), and the client cannot send. Checked on a tick rather
 * than per byte, so a body costs one timer whatever its size; the tick bounds how late a cut may come.
 */
import type { IncomingMessage } from "node:http";
import { BodyTimeoutError } from "../../shared/errors";
import type { TimedRequest } from "./http-bounds";

export interface BodyBounds {
  /** Longest time without a byte, in milliseconds. */
  idleMs: number;
  /** When the whole body must be in (epoch milliseconds). */
  deadline: number;
}

const seconds = (ms: number): string => `${Math.round(ms / 100) / 10} s`;

/** The gateway holds the body back: its buffer is full, so Node reads no more of the connection. */
const heldBack = (req: IncomingMessage): boolean => req.readableLength >= req.readableHighWaterMark;

/**
 * Calls `onTimeout` once when a bound is passed; stops by itself when the body ends or the request closes.
 * Returns a function that stops watching. It adds no listener of its own that reads the body.
 */
export function watchBody(
  req: TimedRequest,
  bounds: BodyBounds,
  onTimeout: (err: BodyTimeoutError) => void,
  now: () => number = Date.now,
): () => void {
  if (req.complete) return () => undefined;
  // A quarter of a second at most: a stalled client is cut within that of its bound.
  const tickMs = Math.max(50, Math.min(250, Math.floor(bounds.idleMs / 16)));
  const bytesRead = () => req.socket?.bytesRead ?? 0;
  let seenBytes = bytesRead();
  // Bytes that came after the arrival came at a time unknown here: counted as just now.
  let lastProgress =
    req.$arrival && req.$arrival.bytesRead === seenBytes ? Math.min(req.$arrival.at, now()) : now();
  const stop = () => {
    clearInterval(tick);
    req.off("end", stop);
    req.off("close", stop);
  };
  const tick = setInterval(() => {
    const t = now();
    if (req.complete) return stop();
    if (t >= bounds.deadline) {
      stop();
      onTimeout(new BodyTimeoutError("Request body did not arrive in time"));
      return;
    }
    const read = bytesRead();
    if (read !== seenBytes || heldBack(req)) {
      seenBytes = read;
      lastProgress = t;
    } else if (t - lastProgress >= bounds.idleMs) {
      stop();
      onTimeout(new BodyTimeoutError(`Request body stalled: no data for ${seconds(bounds.idleMs)}`));
    }
  }, tickMs);
  tick.unref();
  req.once("end", stop);
  req.once("close", stop);
  return stop;
}
