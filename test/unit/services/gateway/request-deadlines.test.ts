import type { ServerResponse } from "node:http";
import { UPLOAD_TIMEOUT_MS } from "../../../../shared/contracts/stores";
import {
  isAbandoned,
  markAnsweredLate,
  RequestDeadlines,
} from "../../../../services/gateway/request-deadlines";
import {
  HTTP_REQUEST_TIMEOUT_MS,
  REST_TIMEOUT_MARGIN_MS,
  type TimedRequest,
} from "../../../../services/gateway/http-bounds";

const request = (method: string, url: string): TimedRequest => ({ method, url }) as TimedRequest;
const response = () =>
  ({ writableEnded: false, destroyed: false, headersSent: false }) as unknown as ServerResponse & {
    writableEnded: boolean;
    headersSent: boolean;
  };

function setup() {
  let now = Date.now();
  const late: TimedRequest[] = [];
  const deadlines = new RequestDeadlines(
    (req) => late.push(req),
    () => now,
  );
  return { deadlines, late, advance: (ms: number) => (now += ms) };
}

describe("request deadlines", () => {
  it("when a request is unanswered a margin past HTTP_REQUEST_TIMEOUT_MS, then it is answered late once, not before", () => {
    const { deadlines, late, advance } = setup();
    const req = request("GET", "/rounds/r1");
    deadlines.track(req, response());
    advance(HTTP_REQUEST_TIMEOUT_MS + REST_TIMEOUT_MARGIN_MS - 1);
    deadlines.sweep();
    expect(late).toEqual([]);
    advance(2);
    deadlines.sweep();
    deadlines.sweep();
    expect(late).toEqual([req]);
    expect(deadlines.size).toBe(0);
  });

  it("when the request is an upload, then its bound is UPLOAD_TIMEOUT_MS", () => {
    const { deadlines, late, advance } = setup();
    const upload = request("POST", "/stores/1/events");
    deadlines.track(upload, response());
    advance(HTTP_REQUEST_TIMEOUT_MS + REST_TIMEOUT_MARGIN_MS + 1);
    deadlines.sweep();
    expect(late).toEqual([]);
    advance(UPLOAD_TIMEOUT_MS - HTTP_REQUEST_TIMEOUT_MS);
    deadlines.sweep();
    expect(late).toEqual([upload]);
  });

  it("when a request was answered, or its answer begun, then it is forgotten without a late answer", () => {
    const { deadlines, late, advance } = setup();
    const ended = response();
    const begun = response();
    const done = deadlines.track(request("GET", "/a"), response());
    deadlines.track(request("GET", "/b"), ended);
    deadlines.track(request("GET", "/c"), begun);
    deadlines.done(done);
    ended.writableEnded = true;
    deadlines.sweep();
    expect(deadlines.size).toBe(1);
    begun.headersSent = true;
    advance(HTTP_REQUEST_TIMEOUT_MS + REST_TIMEOUT_MARGIN_MS + 1);
    deadlines.sweep();
    expect(late).toEqual([]);
    expect(deadlines.size).toBe(0);
  });
});

describe("abandoned requests", () => {
  it("when a request was answered late, then it is abandoned, though its connection is open", () => {
    const req = { socket: { destroyed: false } };
    expect(isAbandoned(req)).toBe(false);
    markAnsweredLate(req);
    expect(isAbandoned(req)).toBe(true);
  });

  it("when its client closed the connection, then it is abandoned", () => {
    expect(isAbandoned({ socket: { destroyed: true } })).toBe(true);
  });

  it("when its body was read to the end and the client still waits, then it is not abandoned", () => {
    // Node destroys a request whose body was consumed; only the socket tells whether its client left.
    expect(isAbandoned({ socket: { destroyed: false }, destroyed: true } as never)).toBe(false);
  });
});
