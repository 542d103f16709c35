/**
 * Bounds the time a request body may take to arrive: it may go at most `idleMs` without a byte while the
 * gateway waits for it, and must be in by `deadline`. A client that stalls (a bad network, or on purpose)
 * thus gives back what it holds: its connection, its upload slot and its staged picture.
 *
 * Idle counts only while the gateway is waiting: when the gateway itself holds the body back (its reader
 * paused, or bytes already buffered and not yet read: the stores service writing an upload's chunk), the
 * client cannot send and is not to blame. Checked on a tick rather than per byte, so a body costs one
 * timer whatever its size; the tick bounds how late a cut may come.
 */
import type { IncomingMessage } from "node:http";
import { BodyTimeoutError } from "../../shared/errors";

export interface BodyBounds {
  /** Longest time without a byte, in milliseconds. */
  idleMs: number;
  /** When the whole body must be in (epoch milliseconds). */
  deadline: number;
}

const seconds = (ms: number): string => `${Math.round(ms / 100) / 10} s`;

/**
 * Calls `onTimeout` once when a bound is passed; stops by itself when the body ends or the request closes.
 * Returns a function that stops watching. Call it once the body's reader is attached (a `data` listener
 * of its own here would otherwise start the flow before anyone reads it).
 */
export function watchBody(
  req: IncomingMessage,
  bounds: BodyBounds,
  onTimeout: (err: BodyTimeoutError) => void,
  now: () => number = Date.now,
): () => void {
  if (req.complete) return () => undefined;
  const tickMs = Math.max(50, Math.min(1000, Math.floor(bounds.idleMs / 4)));
  let lastProgress = now();
  const onData = () => {
    lastProgress = now();
  };
  const stop = () => {
    clearInterval(tick);
    req.off("data", onData);
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
    // The gateway holds the body back: the client's silence is ours.
    if (req.isPaused() || req.readableLength > 0) lastProgress = t;
    else if (t - lastProgress >= bounds.idleMs) {
      stop();
      onTimeout(new BodyTimeoutError(`Request body stalled: no data for ${seconds(bounds.idleMs)}`));
    }
  }, tickMs);
  tick.unref();
  // The reader is attached already, so this listener changes nothing in how the body flows.
  req.on("data", onData);
  req.once("end", stop);
  req.once("close", stop);
  return stop;
}
