import { PassThrough } from "node:stream";
import type { IncomingMessage } from "node:http";
import { watchBody } from "../../services/gateway/body-watch";

/** A request body the test feeds by hand; `complete` as Node's IncomingMessage sets it. */
function body(): IncomingMessage & PassThrough {
  const stream = new PassThrough() as unknown as IncomingMessage & PassThrough;
  (stream as { complete: boolean }).complete = false;
  return stream;
}

beforeEach(() => jest.useFakeTimers({ now: 0 }));
afterEach(() => jest.useRealTimers());

describe("watchBody", () => {
  it("when no byte comes for the idle bound while the body is read, then it times out once, as a 408", () => {
    const req = body();
    req.on("data", () => undefined);
    const onTimeout = jest.fn();
    watchBody(req, { idleMs: 4000, deadline: 60_000 }, onTimeout);
    jest.advanceTimersByTime(3000);
    req.write("x");
    jest.advanceTimersByTime(3500);
    expect(onTimeout).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1500);
    expect(onTimeout).toHaveBeenCalledTimes(1);
    expect(onTimeout.mock.calls[0][0]).toMatchObject({
      code: 408,
      message: "Request body stalled: no data for 4 s",
    });
    jest.advanceTimersByTime(10_000);
    expect(onTimeout).toHaveBeenCalledTimes(1);
  });

  it("when the reader holds the body back (paused), then the client's silence does not count", () => {
    const req = body();
    req.on("data", () => undefined);
    req.pause();
    const onTimeout = jest.fn();
    watchBody(req, { idleMs: 4000, deadline: 60_000 }, onTimeout);
    jest.advanceTimersByTime(20_000);
    expect(onTimeout).not.toHaveBeenCalled();
    req.resume();
    jest.advanceTimersByTime(5000);
    expect(onTimeout).toHaveBeenCalledTimes(1);
  });

  it("when bytes keep coming past the deadline, then it times out at the deadline", () => {
    const req = body();
    req.on("data", () => undefined);
    const onTimeout = jest.fn();
    watchBody(req, { idleMs: 4000, deadline: 10_000 }, onTimeout);
    for (let t = 0; t < 12; t++) {
      req.write("x");
      jest.advanceTimersByTime(1000);
    }
    expect(onTimeout).toHaveBeenCalledTimes(1);
    expect(onTimeout.mock.calls[0][0].message).toBe("Request body did not arrive in time");
  });

  it("when the body ends, then nothing times out", () => {
    const req = body();
    req.on("data", () => undefined);
    const onTimeout = jest.fn();
    watchBody(req, { idleMs: 1000, deadline: 2000 }, onTimeout);
    // What Node does once the last byte of a body is in.
    (req as { complete: boolean }).complete = true;
    req.emit("end");
    jest.advanceTimersByTime(5000);
    expect(onTimeout).not.toHaveBeenCalled();
  });
});
