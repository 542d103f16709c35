/**
 * The whole-request bound (HTTP_REQUEST_TIMEOUT_MS, or UPLOAD_TIMEOUT_MS for an upload; decision 0073):
 * a request still unanswered REST_TIMEOUT_MARGIN_MS after its deadline is answered 504, so a body still
 * arriving at the deadline meets its reader's 408 first.
 *
 * Why a sweep: the `rest` call's own timeout did this before, and Moleculer times a call with a timer, a
 * promise race and their closures per call, a share of a hot read's CPU (decision 0073 has the A/B).
 * Here a request costs one set insertion and one deletion, and one interval per gateway looks over the
 * requests in flight (at most one per open connection, bar pipelining) a few times a second. The bound
 * is late by at most one tick; a request answered meanwhile is simply dropped from the set.
 */
import type { ServerResponse } from "node:http";
import { requestDeadline, REST_TIMEOUT_MARGIN_MS, type TimedRequest } from "./http-bounds";

/** How often the requests in flight are looked over: the most a 504 may come after its bound. */
export const DEADLINE_TICK_MS = 250;

interface InFlight {
  req: TimedRequest;
  res: ServerResponse;
  /** When it is answered 504 if still unanswered. */
  late: number;
}

export type LateAnswer = (req: TimedRequest, res: ServerResponse) => void;

/** What a request carries once answered late (`markAnsweredLate`). */
export interface AbandonableRequest {
  $answeredLate?: boolean;
  socket?: { destroyed?: boolean } | null;
}

export const markAnsweredLate = (req: AbandonableRequest): void => {
  req.$answeredLate = true;
};

/**
 * Whether nobody waits for this request's answer any more: it was answered 504 at its deadline, or its
 * client closed the connection. (The socket, not the request: a request whose body was read to its
 * end is itself destroyed then, while its client still waits.)
 */
export const isAbandoned = (req: AbandonableRequest): boolean =>
  req.$answeredLate === true || req.socket?.destroyed === true;

export class RequestDeadlines {
  private readonly inFlight = new Set<InFlight>();
  private tick: NodeJS.Timeout | undefined;

  /** `answerLate` answers a request that passed its bound; it is called at most once per request. */
  constructor(
    private readonly answerLate: LateAnswer,
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    this.tick ??= setInterval(() => this.sweep(), DEADLINE_TICK_MS);
    this.tick.unref();
  }

  stop(): void {
    clearInterval(this.tick);
    this.tick = undefined;
    this.inFlight.clear();
  }

  /** Times a request from now on; `done` with what this returns once the request's handling ends. */
  track(req: TimedRequest, res: ServerResponse): InFlight {
    const entry = { req, res, late: requestDeadline(req, this.now()) + REST_TIMEOUT_MARGIN_MS };
    this.inFlight.add(entry);
    return entry;
  }

  done(entry: InFlight): void {
    this.inFlight.delete(entry);
  }

  /** How many requests are timed now (for tests and metrics). */
  get size(): number {
    return this.inFlight.size;
  }

  /** Answers every request past its bound that has no answer yet; forgets the ones answered. */
  sweep(): void {
    const t = this.now();
    for (const entry of this.inFlight) {
      const { res } = entry;
      if (res.writableEnded || res.destroyed) {
        this.inFlight.delete(entry);
      } else if (t >= entry.late) {
        this.inFlight.delete(entry);
        // An answer already begun (its headers out) is left to finish, as the call timeout left it.
        if (!res.headersSent) this.answerLate(entry.req, res);
      }
    }
  }
}
