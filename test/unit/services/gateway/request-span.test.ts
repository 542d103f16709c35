/**
 * The gateway's request span with a caller's trace context (decision 0143): the context is continued
 * (trace id, parent, decision), the caller's decision wins over the rate in both directions, a deferred
 * one leaves it to the rate, and a traced request's answer carries `traceparent` naming the span.
 */
import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { ServiceBroker, type Context } from "moleculer";
import {
  continueTrace,
  traceRequest,
  type RootCallOptions,
  type TracedRequest,
} from "../../../../services/gateway/request-span";
import type { RouteSpec } from "../../../../services/gateway/routes";
import { BoundedZipkinExporter, zipkinSpanId } from "../../../../shared/tracing";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER = "00f067aa0ba902b7";

describe("the gateway's request span with a caller's trace context", () => {
  let broker: ServiceBroker;
  let exporter: BoundedZipkinExporter;

  beforeEach(async () => {
    // Nothing listens: the spans are read from the exporter's queue.
    exporter = new BoundedZipkinExporter({
      endpoint: "http://127.0.0.1:9/",
      intervalMs: 60_000,
      maxQueue: 100,
    });
    broker = new ServiceBroker({
      logger: false,
      tracing: { enabled: true, sampling: { rate: 1 }, exporter: [exporter as never] },
    });
    broker.createService({ name: "gateway" });
    broker.createService({ name: "work", actions: { run: async () => "done" } });
    await broker.start();
  });
  afterEach(() => broker.stop());

  /** One request with these headers through continueTrace and traceRequest; what was exported and answered. */
  async function request(headers: Record<string, string>, rate: number) {
    const req = Object.assign(new EventEmitter(), {
      method: "GET",
      url: "/rounds/r1",
      headers,
    }) as unknown as TracedRequest;
    const answered: Record<string, string> = {};
    const res = Object.assign(new EventEmitter(), {
      headersSent: false,
      statusCode: 200,
      writableFinished: true,
      setHeader: (name: string, value: string) => (answered[name.toLowerCase()] = value),
    }) as unknown as ServerResponse;
    const options: RootCallOptions = { requestID: headers["x-request-id"] };
    continueTrace(options, req);
    const ctx = broker.ContextFactory.create(broker, null as never, { req, res }, options) as Context<{
      req: TracedRequest;
      res: ServerResponse;
    }>;
    const spec = { method: "GET", path: "/rounds/:round_id", action: "rounds.get" } as RouteSpec;
    traceRequest(broker.getLocalService("gateway")!, ctx, () => spec, rate);
    await ctx.call("work.run");
    (res as unknown as EventEmitter).emit("close");
    return { spans: exporter.queue.splice(0), answered, ctx };
  }

  it("when a sampled traceparent comes at a rate of 0, then the request is traced in the caller's trace, its span the caller's span's child, and the answer names it", async () => {
    const { spans, answered, ctx } = await request({ traceparent: `00-${TRACE}-${CALLER}-01` }, 0);
    expect(ctx.requestID).toBe(TRACE);
    const root = spans.find((s) => s.name === "GET /rounds/:round_id")!;
    const call = spans.find((s) => s.name === "action 'work.run'")!;
    expect(root).toMatchObject({ traceId: TRACE, parentId: CALLER });
    expect(call).toMatchObject({ traceId: TRACE, parentId: root.id });
    expect(root.id).toBe(zipkinSpanId(ctx.id));
    expect(answered.traceparent).toBe(`00-${TRACE}-${root.id}-01`);
  });

  it("when an unsampled traceparent comes at a rate of 1, then nothing is traced and the answer has no traceparent", async () => {
    const { spans, answered } = await request({ traceparent: `00-${TRACE}-${CALLER}-00` }, 1);
    expect(spans).toEqual([]);
    expect(answered.traceparent).toBeUndefined();
  });

  it("when a B3 context leaves the decision open, then the rate decides, in the caller's trace", async () => {
    const out = await request({ b3: `${TRACE}-${CALLER}` }, 0);
    expect(out.spans).toEqual([]);
    const kept = await request({ b3: `${TRACE}-${CALLER}` }, 1);
    expect(kept.spans.find((s) => s.name === "GET /rounds/:round_id")).toMatchObject({
      traceId: TRACE,
      parentId: CALLER,
    });
  });

  it("when the client also sent its own X-Request-ID, then the request id is the trace id and the span keeps the client's id as a tag", async () => {
    const { spans, ctx } = await request(
      { traceparent: `00-${TRACE}-${CALLER}-01`, "x-request-id": "mine-1" },
      0,
    );
    expect(ctx.requestID).toBe(TRACE);
    expect(spans.find((s) => s.name === "GET /rounds/:round_id")!.tags["request.client_id"]).toBe("mine-1");
  });

  it("when no or a malformed context comes, then the client's request id stays, the trace is new and has no parent", async () => {
    const { spans, ctx, answered } = await request({ traceparent: "00-bad", "x-request-id": "mine-2" }, 1);
    expect(ctx.requestID).toBe("mine-2");
    const root = spans.find((s) => s.name === "GET /rounds/:round_id")!;
    expect(root.parentId).toBeUndefined();
    expect(answered.traceparent).toBe(`00-${root.traceId}-${root.id}-01`);
  });
});
