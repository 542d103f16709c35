import { Readable, Writable } from "node:stream";
import type { ServerResponse } from "node:http";
import {
  answerRoute,
  routeOfRequest,
  writeAnswer,
  type AnswerMeta,
  type RoutedRequest,
} from "../../services/gateway/route-answer";
import { ResponseCache } from "../../services/gateway/response-cache";
import { routeByAction, type RouteSpec } from "../../services/gateway/routes";
import { RawJson } from "../../shared/runtime/raw-json";

/** A response that records its head and body, as Node's ServerResponse would send them. */
function response() {
  const chunks: Buffer[] = [];
  const res = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(Buffer.from(chunk));
      done();
    },
  }) as Writable & {
    statusCode: number;
    headers: Record<string, unknown>;
    headersSent: boolean;
    writeHead(status: number, headers: Record<string, unknown>): void;
  };
  Object.assign(res, {
    statusCode: 200,
    headers: {},
    headersSent: false,
    writeHead(status: number, headers: Record<string, unknown>) {
      res.statusCode = status;
      res.headers = headers;
      res.headersSent = true;
    },
  });
  const body = () => Buffer.concat(chunks).toString("utf8");
  return { res: res as unknown as ServerResponse & typeof res, body };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));
const spec = (action: string): RouteSpec => routeByAction.get(action) as RouteSpec;

describe("route answers", () => {
  it("when an action answers JSON bytes in parts, then they are written as they are, with their length", async () => {
    const { res, body } = response();
    writeAnswer(
      res,
      new RawJson(Buffer.from('{"a":'), Buffer.from("1}")),
      {},
      new ResponseCache(1000, 10),
      undefined,
    );
    await settle();
    expect(res.statusCode).toBe(200);
    expect(res.headers).toMatchObject({
      "Content-Length": 7,
      "Content-Type": "application/json; charset=utf-8",
    });
    expect(body()).toBe('{"a":1}');
  });

  it("when an action answers a value with a status and headers in its meta, then the value is written as JSON with them", async () => {
    const { res, body } = response();
    const meta: AnswerMeta = { $statusCode: 202, $responseHeaders: { "Retry-After": "1" } };
    writeAnswer(res, { job_id: "j", text: "é" }, meta, new ResponseCache(1000, 10), undefined);
    await settle();
    expect(res.statusCode).toBe(202);
    expect(res.headers).toMatchObject({ "Content-Length": 26, "Retry-After": "1" });
    expect(JSON.parse(body())).toEqual({ job_id: "j", text: "é" });
  });

  it("when an action answers a stream, then it is piped out with the type and headers its meta names", async () => {
    const { res, body } = response();
    const meta: AnswerMeta = { $responseType: "image/png", $responseHeaders: { "Content-Length": "3" } };
    writeAnswer(res, Readable.from([Buffer.from("png")]), meta, new ResponseCache(1000, 10), undefined);
    await new Promise((resolve) => res.on("finish", resolve));
    expect(res.headers).toMatchObject({ "Content-Type": "image/png", "Content-Length": "3" });
    expect(body()).toBe("png");
  });

  it("when the request was answered already (a body cut off), then the action's late answer is dropped", () => {
    const { res } = response();
    res.headersSent = true;
    const stream = Readable.from([Buffer.from("x")]);
    writeAnswer(res, stream, {}, new ResponseCache(1000, 10), undefined);
    expect(stream.destroyed).toBe(true);
  });

  it("when a microcached read's answer is kept, then the next read is answered without a call", async () => {
    const gateway = { responses: new ResponseCache(1000, 10), takesRawJson: true, answerError: jest.fn() };
    const handler = answerRoute(spec("rounds.get"));
    const request = () => {
      const meta: AnswerMeta = { user: { id: "u1" } as never };
      // As the rounds service does: the answer holds for a while (its meta comes back to the caller).
      const call = jest.fn(async () => {
        meta.$freshUntil = Date.now() + 60_000;
        return new RawJson(Buffer.from('{"id":"r1"}'));
      });
      return {
        $ctx: { meta, call },
        $params: { round_id: "r1" },
        $alias: { handler },
      } as unknown as RoutedRequest & {
        $ctx: { meta: AnswerMeta; call: jest.Mock };
      };
    };
    const first = request();
    const one = response();
    handler.call(gateway, first, one.res);
    await settle();
    expect(first.$ctx.call).toHaveBeenCalledWith("rounds.get", { round_id: "r1" });
    expect(first.$ctx.meta.$rawJson).toBe("rounds.get");
    expect(one.body()).toBe('{"id":"r1"}');

    const second = request();
    const two = response();
    handler.call(gateway, second, two.res);
    await settle();
    expect(second.$ctx.call).not.toHaveBeenCalled();
    expect(two.body()).toBe('{"id":"r1"}');
    expect(routeOfRequest(second)).toBe(spec("rounds.get"));
  });

  it("when the action fails, then the error is answered by the gateway's error answer", async () => {
    const answerError = jest.fn();
    const gateway = { responses: new ResponseCache(1000, 10), takesRawJson: false, answerError };
    const failure = new Error("down");
    const req = {
      $ctx: { meta: {}, call: jest.fn(async () => Promise.reject(failure)) },
      $params: {},
    } as unknown as RoutedRequest;
    const { res } = response();
    answerRoute(spec("users.friends")).call(gateway, req, res);
    await settle();
    expect(answerError).toHaveBeenCalledWith(req, res, failure);
  });
});
