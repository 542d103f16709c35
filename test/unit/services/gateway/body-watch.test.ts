import { PassThrough } from "node:stream";
import { watchBody } from "../../../../services/gateway/body-watch";
import { markArrival, type TimedRequest } from "../../../../services/gateway/http-bounds";

type FedBody = TimedRequest & PassThrough & { arrive(bytes: string): void };

/**
 * A request body the test feeds by hand: `arrive` is a byte from the client (its connection reads it,
 * then the body has it); `complete` as Node's IncomingMessage sets it.
 */
function body(highWaterMark = 16): FedBody {
  const stream = new PassThrough({ highWaterMark }) as unknown as FedBody;
  const socket = { bytesRead: 0 };
  Object.assign(stream, {
    complete: false,
    socket,
    arrive(bytes: string) {
      socket.bytesRead += bytes.length;
      stream.write(bytes);
    },
  });
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
    req.arrive("x");
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

  it("when the client went silent before the gateway began to read, then its silence counts from its arrival", () => {
    const req = body();
    req.arrive("first bytes");
    markArrival(req, Date.now());
    jest.advanceTimersByTime(3000); // authenticating, the first bytes unread
    req.on("data", () => undefined);
    const onTimeout = jest.fn();
    watchBody(req, { idleMs: 4000, deadline: 60_000 }, onTimeout);
    jest.advanceTimersByTime(1000);
    expect(onTimeout).toHaveBeenCalledTimes(1);
    expect(Date.now()).toBe(4000);
  });

  it("when bytes came after the arrival but before the watch, then its silence counts from the watch", () => {
    const req = body();
    markArrival(req, Date.now());
    jest.advanceTimersByTime(3000);
    req.arrive("late bytes");
    req.on("data", () => undefined);
    const onTimeout = jest.fn();
    watchBody(req, { idleMs: 4000, deadline: 60_000 }, onTimeout);
    jest.advanceTimersByTime(3000);
    expect(onTimeout).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1000);
    expect(onTimeout).toHaveBeenCalledTimes(1);
  });

  it("when the gateway holds the body back (its buffer full, so the connection is not read), then the client's silence does not count", () => {
    const req = body(4);
    const onTimeout = jest.fn();
    watchBody(req, { idleMs: 4000, deadline: 60_000 }, onTimeout);
    req.arrive("xxxxxxxx"); // nobody reads: the buffer is past its high-water mark
    jest.advanceTimersByTime(20_000);
    expect(onTimeout).not.toHaveBeenCalled();
    while (req.read() !== null); // the gateway reads again; the client sends nothing more
    jest.advanceTimersByTime(5000);
    expect(onTimeout).toHaveBeenCalledTimes(1);
  });

  it("when the reader is paused but the client could still send, then its silence counts", () => {
    const req = body();
    req.on("data", () => undefined);
    req.pause();
    const onTimeout = jest.fn();
    watchBody(req, { idleMs: 4000, deadline: 60_000 }, onTimeout);
    jest.advanceTimersByTime(4000);
    expect(onTimeout).toHaveBeenCalledTimes(1);
  });

  it("when bytes keep coming past the deadline, then it times out at the deadline", () => {
    const req = body();
    req.on("data", () => undefined);
    const onTimeout = jest.fn();
    watchBody(req, { idleMs: 4000, deadline: 10_000 }, onTimeout);
    for (let t = 0; t < 12; t++) {
      req.arrive("x");
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
