/**
 * Tracing's parts without a cluster: Moleculer ids as Zipkin ids, the exporter (Zipkin v2 shape, the
 * bounded queue, one warning per outage, no retries, bounded stop), the trace context carried by facts,
 * and the tags of the gateway's request span.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { ServiceBroker, type Context, type ServiceSchema } from "moleculer";
import { headers as natsHeaders } from "nats";
import { EventEmitter } from "node:events";
import {
  BoundedZipkinExporter,
  deliveredTrace,
  sampleRequest,
  traceContextOf,
  traceHeaders,
  zipkinSpanId,
  zipkinTraceId,
  type ZipkinSpan,
} from "../../../../shared/tracing";
import { outboxEntry } from "../../../../shared/outbox";
import { channelPublisher, factHandler } from "../../../../shared/runtime/channels";
import { check } from "../../../../shared/validation";
import {
  callerOf,
  requestSpanTags,
  routeOf,
  traceRequest,
  type TracedRequest,
} from "../../../../services/gateway/request-span";
import type { RouteSpec } from "../../../../services/gateway/routes";
import type { ServerResponse } from "node:http";

const HEX32 = /^[0-9a-f]{32}$/;
const HEX16 = /^[0-9a-f]{16}$/;

/** Zipkin v2's span (the fields this exporter writes; https://zipkin.io/zipkin-api/zipkin2-api.yaml). */
const ZipkinV2Span = {
  type: "object",
  required: ["traceId", "id", "name", "kind", "timestamp", "duration", "localEndpoint", "tags"],
  additionalProperties: false,
  properties: {
    traceId: { type: "string", pattern: "^([0-9a-f]{16}|[0-9a-f]{32})$" },
    id: { type: "string", pattern: "^[0-9a-f]{16}$" },
    parentId: { type: "string", pattern: "^[0-9a-f]{16}$" },
    name: { type: "string" },
    kind: { enum: ["CLIENT", "SERVER", "PRODUCER", "CONSUMER"] },
    timestamp: { type: "integer", minimum: 1 },
    duration: { type: "integer", minimum: 1 },
    localEndpoint: {
      type: "object",
      required: ["serviceName"],
      properties: { serviceName: { type: "string", minLength: 1 } },
    },
    tags: { type: "object", additionalProperties: { type: "string" } },
  },
};

/** A stand-in collector: keeps every POSTed batch; `status` decides the answer, `hang` never answers. */
async function collector() {
  const batches: ZipkinSpan[][] = [];
  const state = { status: 202, hang: false };
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      if (state.hang) return;
      if (state.status < 300) batches.push(JSON.parse(body) as ZipkinSpan[]);
      res.writeHead(state.status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v2/spans`;
  const close = () => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  };
  return { url, batches, state, close, spans: () => batches.flat() };
}

/** A URL where nothing listens. */
async function deadUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return `http://127.0.0.1:${port}/api/v2/spans`;
}

function tracedBroker(
  exporter: BoundedZipkinExporter,
  services: ServiceSchema[] = [],
  sampleRate = 1,
): ServiceBroker {
  const broker = new ServiceBroker({
    logger: false,
    nodeID: "unit-node",
    tracing: {
      enabled: true,
      events: true,
      sampling: { rate: sampleRate },
      tags: { action: { params: false, meta: false, response: false }, event: { params: false } },
      exporter: [exporter as never],
    },
  });
  for (const s of services) broker.createService(s);
  return broker;
}

/** `n` finished spans of a trace of their own. */
function finishSpans(broker: ServiceBroker, n: number): void {
  for (let i = 0; i < n; i++) broker.tracer.startSpan(`span ${i}`).finish();
}

describe("Zipkin ids", () => {
  it("when the request id is a UUID, then the trace id is its 32 hex digits and span ids its first 16", () => {
    const uuid = "3F2504E0-4F89-41D3-9A0C-0305E82C3301";
    expect(zipkinTraceId(uuid)).toBe("3f2504e04f8941d39a0c0305e82c3301");
    expect(zipkinSpanId(uuid)).toBe("3f2504e04f8941d3");
  });

  it("when the request id is 16 or 32 hex digits already, then it stays (lower-cased)", () => {
    expect(zipkinTraceId("ABCDEF0123456789")).toBe("abcdef0123456789");
    expect(zipkinTraceId("0123456789abcdef0123456789ABCDEF")).toBe("0123456789abcdef0123456789abcdef");
    expect(zipkinSpanId("abcdef0123456789")).toBe("abcdef0123456789");
  });

  it("when the request id is any other string, then it is hashed to 32 hex digits, the same in every process", () => {
    const a = zipkinTraceId("client-req 42 ✓");
    expect(a).toMatch(HEX32);
    expect(zipkinTraceId("client-req 42 ✓")).toBe(a);
    expect(zipkinTraceId("client-req 43 ✓")).not.toBe(a);
    expect(zipkinSpanId("not-a-uuid")).toMatch(HEX16);
  });

  it("when an id is all zeros (invalid in Zipkin), then it is hashed", () => {
    expect(zipkinTraceId("0".repeat(32))).not.toBe("0".repeat(32));
    expect(zipkinTraceId("0".repeat(32))).toMatch(HEX32);
    expect(zipkinSpanId("0".repeat(16))).toMatch(HEX16);
  });
});

describe("BoundedZipkinExporter", () => {
  let col: Awaited<ReturnType<typeof collector>>;
  beforeEach(async () => {
    col = await collector();
  });
  afterEach(() => col.close());

  it("when actions call each other, then the collector gets valid Zipkin v2 spans of one trace with parent links, the request id as a tag and no params", async () => {
    const exporter = new BoundedZipkinExporter({ endpoint: col.url, intervalMs: 60_000, maxQueue: 100 });
    const broker = tracedBroker(exporter, [
      {
        name: "outer",
        actions: {
          run: (ctx: Context<{ token: string }>) => ctx.call("inner.run", { token: ctx.params.token }),
        },
      },
      { name: "inner", actions: { run: () => "ok" } },
    ]);
    await broker.start();
    try {
      await broker.call("outer.run", { token: "secret-token-123" }, { requestID: "my request" });
      await exporter.flush();
    } finally {
      await broker.stop();
    }
    const spans = col.spans();
    expect(spans).toHaveLength(2);
    for (const s of spans) expect(check(ZipkinV2Span, s)).toBe(true);
    const outer = spans.find((s) => s.name === "action 'outer.run'")!;
    const inner = spans.find((s) => s.name === "action 'inner.run'")!;
    expect(outer.traceId).toBe(zipkinTraceId("my request"));
    expect(inner.traceId).toBe(outer.traceId);
    expect(outer.parentId).toBeUndefined();
    expect(inner.parentId).toBe(outer.id);
    expect(outer.localEndpoint.serviceName).toBe("outer");
    expect(outer.tags["request.id"]).toBe("my request");
    expect(outer.tags["node.id"]).toBe("unit-node");
    expect(JSON.stringify(col.batches)).not.toContain("secret-token-123");
  });

  it("when an action emits an event, then the handler's span is a CONSUMER child of the action's span", async () => {
    const exporter = new BoundedZipkinExporter({ endpoint: col.url, intervalMs: 60_000, maxQueue: 100 });
    let heard!: () => void;
    const done = new Promise<void>((r) => (heard = r));
    const broker = tracedBroker(exporter, [
      {
        name: "emitter",
        actions: { run: (ctx: Context) => ctx.emit("thing.happened", { secret: "s3cr3t" }) },
      },
      { name: "listener", events: { "thing.happened": () => heard() } },
    ]);
    await broker.start();
    try {
      await broker.call("emitter.run");
      await done;
      await new Promise((r) => setImmediate(r));
      await exporter.flush();
    } finally {
      await broker.stop();
    }
    const spans = col.spans();
    const action = spans.find((s) => s.name === "action 'emitter.run'")!;
    const handler = spans.find((s) => s.name === "event 'thing.happened' in 'listener'")!;
    expect(handler).toMatchObject({ kind: "CONSUMER", traceId: action.traceId, parentId: action.id });
    expect(action.kind).toBe("SERVER");
    expect(JSON.stringify(spans)).not.toContain("s3cr3t");
  });

  it("when an action fails, then its span carries the error's type, code and name (not its data)", async () => {
    const exporter = new BoundedZipkinExporter({ endpoint: col.url, intervalMs: 60_000, maxQueue: 100 });
    const broker = tracedBroker(exporter, [
      {
        name: "failing",
        actions: {
          run() {
            const err = Object.assign(new Error("Round not found"), {
              code: 404,
              type: "NOT_FOUND",
              data: { echoed: "secret-input" },
            });
            throw err;
          },
        },
      },
    ]);
    await broker.start();
    try {
      await expect(broker.call("failing.run")).rejects.toThrow("Round not found");
      await exporter.flush();
    } finally {
      await broker.stop();
    }
    const [span] = col.spans();
    expect(span.tags).toMatchObject({
      error: "NOT_FOUND",
      "error.type": "NOT_FOUND",
      "error.code": "404",
      "error.message": "Round not found",
    });
    expect(JSON.stringify(span)).not.toContain("secret-input");
  });

  it("when more spans finish than the queue holds, then the newest are dropped and counted, and the queue never grows past its bound", async () => {
    const exporter = new BoundedZipkinExporter({ endpoint: col.url, intervalMs: 60_000, maxQueue: 5 });
    const broker = tracedBroker(exporter);
    const warn = jest.spyOn(exporter.logger, "warn").mockImplementation(() => undefined);
    finishSpans(broker, 8);
    expect(exporter.queue).toHaveLength(5);
    expect(exporter.dropped).toBe(3);
    expect(exporter.queue.map((s) => s.name)).toEqual(["span 0", "span 1", "span 2", "span 3", "span 4"]);
    expect(warn).toHaveBeenCalledTimes(1);
    await exporter.flush();
    expect(col.spans()).toHaveLength(5);
    expect(exporter.exported).toBe(5);
    await broker.stop();
  });

  it("when a batch is full, then it is sent at once in batches of batchSize, without waiting for the timer", async () => {
    const exporter = new BoundedZipkinExporter({
      endpoint: col.url,
      intervalMs: 60_000,
      maxQueue: 100,
      batchSize: 4,
    });
    const broker = tracedBroker(exporter);
    finishSpans(broker, 9);
    await exporter.flush();
    await exporter.flush();
    expect(col.batches.map((b) => b.length)).toEqual([4, 4, 1]);
    await broker.stop();
  });

  it("when the collector is down, then each flush drops its batch without retrying, one warning covers the whole outage, and its return is logged once with the count", async () => {
    const dead = await deadUrl();
    const exporter = new BoundedZipkinExporter({ endpoint: dead, intervalMs: 60_000, maxQueue: 100 });
    const broker = tracedBroker(exporter);
    const warn = jest.spyOn(exporter.logger, "warn").mockImplementation(() => undefined);
    const info = jest.spyOn(exporter.logger, "info").mockImplementation(() => undefined);
    const posts = jest.spyOn(globalThis, "fetch");
    for (let i = 0; i < 5; i++) {
      finishSpans(broker, 10);
      await exporter.flush();
      expect(exporter.queue).toHaveLength(0);
    }
    expect(posts).toHaveBeenCalledTimes(5);
    expect(exporter.dropped).toBe(50);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0][0])).toMatch(/ECONNREFUSED/);
    expect(info).not.toHaveBeenCalled();
    posts.mockRestore();
    await broker.stop();
  });

  it("when the collector refuses batches and then accepts them, then one warning, then one info line with the dropped count", async () => {
    const exporter = new BoundedZipkinExporter({ endpoint: col.url, intervalMs: 60_000, maxQueue: 100 });
    const broker = tracedBroker(exporter);
    const warn = jest.spyOn(exporter.logger, "warn").mockImplementation(() => undefined);
    const info = jest.spyOn(exporter.logger, "info").mockImplementation(() => undefined);
    col.state.status = 503;
    for (let i = 0; i < 3; i++) {
      finishSpans(broker, 4);
      await exporter.flush();
    }
    col.state.status = 202;
    finishSpans(broker, 2);
    await exporter.flush();
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0][0])).toMatch(/HTTP 503/);
    expect(info).toHaveBeenCalledTimes(1);
    expect(String(info.mock.calls[0][0])).toMatch(/12 were dropped/);
    expect(col.spans()).toHaveLength(2);
    await broker.stop();
  });

  it("when the broker has metrics, then the queue, the exported and the dropped spans are metrics", async () => {
    const exporter = new BoundedZipkinExporter({ endpoint: col.url, intervalMs: 60_000, maxQueue: 3 });
    const broker = new ServiceBroker({
      logger: false,
      metrics: { enabled: true },
      tracing: { enabled: true, exporter: [exporter as never] },
    });
    jest.spyOn(exporter.logger, "warn").mockImplementation(() => undefined);
    const value = (name: string) => broker.metrics.getMetric(name).get()?.value;
    expect(value("tracing.spans.dropped.total")).toBe(0);
    finishSpans(broker, 5);
    expect(value("tracing.spans.queued")).toBe(3);
    expect(value("tracing.spans.dropped.total")).toBe(2);
    await exporter.flush();
    expect(value("tracing.spans.queued")).toBe(0);
    expect(value("tracing.spans.exported.total")).toBe(3);
    await broker.stop();
  });

  it("when the collector never answers, then the request is abandoned after the timeout and the spans are dropped", async () => {
    col.state.hang = true;
    const exporter = new BoundedZipkinExporter({
      endpoint: col.url,
      intervalMs: 60_000,
      maxQueue: 100,
      timeoutMs: 200,
    });
    const broker = tracedBroker(exporter);
    const warn = jest.spyOn(exporter.logger, "warn").mockImplementation(() => undefined);
    finishSpans(broker, 3);
    const started = Date.now();
    await exporter.flush();
    expect(Date.now() - started).toBeLessThan(2000);
    expect(exporter.dropped).toBe(3);
    expect(warn).toHaveBeenCalledTimes(1);
    await broker.stop();
  });

  it("when the broker stops, then what is queued is sent, and a hanging collector holds the stop no longer than the bound", async () => {
    const exporter = new BoundedZipkinExporter({ endpoint: col.url, intervalMs: 60_000, maxQueue: 100 });
    const broker = tracedBroker(exporter);
    await broker.start();
    finishSpans(broker, 3);
    await broker.stop();
    expect(col.spans()).toHaveLength(3);

    col.state.hang = true;
    const hanging = new BoundedZipkinExporter({
      endpoint: col.url,
      intervalMs: 60_000,
      maxQueue: 100,
      stopTimeoutMs: 300,
    });
    const other = tracedBroker(hanging);
    jest.spyOn(hanging.logger, "warn").mockImplementation(() => undefined);
    await other.start();
    finishSpans(other, 3);
    const started = Date.now();
    await other.stop();
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("when the exporter runs, then its timer does not keep the process alive", () => {
    const exporter = new BoundedZipkinExporter({ endpoint: col.url, intervalMs: 1000, maxQueue: 10 });
    const broker = tracedBroker(exporter);
    const timer = (exporter as unknown as { timer: NodeJS.Timeout }).timer;
    expect(timer.hasRef()).toBe(false);
    return broker.stop();
  });

  it("when the endpoint has user:password in it, then they go as Basic auth and the logged URL leaves them out", async () => {
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(String(req.headers.authorization));
      req.resume();
      res.writeHead(503).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    const exporter = new BoundedZipkinExporter({
      endpoint: `http://tenant:p%40ss@127.0.0.1:${port}/api/v2/spans`,
      intervalMs: 60_000,
      maxQueue: 10,
    });
    const broker = tracedBroker(exporter);
    const warn = jest.spyOn(exporter.logger, "warn").mockImplementation(() => undefined);
    finishSpans(broker, 1);
    await exporter.flush();
    await new Promise<void>((r) => server.close(() => r()));
    expect(seen).toEqual([`Basic ${Buffer.from("tenant:p@ss").toString("base64")}`]);
    expect(String(warn.mock.calls[0][0])).not.toContain("p%40ss");
    expect(String(warn.mock.calls[0][0])).toContain(`http://127.0.0.1:${port}/api/v2/spans`);
    await broker.stop();
  });
});

describe("trace context of facts", () => {
  it("when a context travels as JetStream headers, then the consumer reads it back; without headers it reads none", () => {
    const trace = { trace_id: "req-1", parent_id: "0b7a7f1e-9d55-4a4e-8f7e-3f1f5e2a9c11" };
    const hdrs = natsHeaders();
    for (const [k, v] of Object.entries(traceHeaders(trace))) hdrs.set(k, v);
    expect(deliveredTrace({ headers: hdrs })).toEqual(trace);
    expect(deliveredTrace({ info: { redeliveryCount: 0 } })).toBeUndefined();
    expect(deliveredTrace(undefined)).toBeUndefined();
  });

  it("when an entry is recorded with a trace context, then it keeps it; without one, the entry has no trace field", () => {
    const now = new Date();
    const trace = { trace_id: "t", parent_id: "p" };
    expect(outboxEntry("c", "k", {}, now, trace).trace).toEqual(trace);
    expect("trace" in outboxEntry("c", "k", {}, now)).toBe(false);
  });

  it("when an embedded relay hands a traced fact to its consumer, then the consumer's span continues that trace, and an untraced (older) fact is still handled", async () => {
    const col = await collector();
    const exporter = new BoundedZipkinExporter({ endpoint: col.url, intervalMs: 60_000, maxQueue: 100 });
    const handled: unknown[] = [];
    const broker = tracedBroker(exporter, [
      {
        name: "consumer",
        channels: {
          "some.fact": {
            group: "consumer",
            handler: factHandler(
              { name: "some.fact", group: "consumer" },
              { type: "object", required: ["n"], properties: { n: { type: "number" } } },
              async (payload: { n: number }) => void handled.push(payload.n),
            ),
          },
        },
      } as ServiceSchema,
    ]);
    await broker.start();
    try {
      const publish = channelPublisher(broker);
      const parent = "0b7a7f1e-9d55-4a4e-8f7e-3f1f5e2a9c11";
      await publish(
        outboxEntry("some.fact", "a", { n: 1 }, new Date(), { trace_id: "req-7", parent_id: parent }),
      );
      await publish(outboxEntry("some.fact", "b", { n: 2 }, new Date()));
      await exporter.flush();
      expect(handled).toEqual([1, 2]);
      const [traced, untraced] = col.spans();
      expect(traced).toMatchObject({
        name: "channel 'some.fact' in 'consumer'",
        kind: "CONSUMER",
        traceId: zipkinTraceId("req-7"),
        parentId: zipkinSpanId(parent),
        tags: { "channel.name": "some.fact", "channel.group": "consumer" },
      });
      expect(untraced.parentId).toBeUndefined();
      expect(untraced.traceId).not.toBe(traced.traceId);
    } finally {
      await broker.stop();
      await col.close();
    }
  });
});

describe("the gateway's request span", () => {
  const spec = {
    method: "GET",
    path: "/rounds/:round_id",
    action: "rounds.get",
    auth: "bearer",
    body: "none",
  } as RouteSpec;
  const keySpec = { ...spec, auth: "apiKey", apiKeyScope: "notifications" } as RouteSpec;

  it("when a route matched, then the span is named by its template (no ids, no query)", () => {
    expect(routeOf({ method: "GET", url: "/rounds/abc?x=1" } as TracedRequest, spec)).toBe(
      "GET /rounds/:round_id",
    );
    expect(
      routeOf({ method: "GET", $alias: { method: "GET", fullPath: "/health" } } as TracedRequest, undefined),
    ).toBe("GET /health");
    expect(routeOf({ method: "PUT" } as TracedRequest, undefined)).toBe("PUT (no route)");
  });

  it("when the caller is a user or an API key, then the span says which (and the key's scope), never the credential", () => {
    expect(callerOf({ user: { id: "u1", token_id: "t1" } }, spec)).toEqual({ kind: "user" });
    expect(callerOf({ apiKey: { key_id: "k1" } }, keySpec)).toEqual({
      kind: "api-key",
      scope: "notifications",
    });
    expect(callerOf({}, spec)).toEqual({ kind: "none" });
  });

  it("when the answer is out, then the tags hold method, route, status, caller and error type", () => {
    const req = { method: "GET", $errorType: "NOT_FOUND" } as TracedRequest;
    const res = { headersSent: true, statusCode: 404, writableFinished: true } as ServerResponse;
    expect(requestSpanTags(req, res, { user: { id: "u1", token_id: "t1" } }, spec)).toEqual({
      http: { method: "GET", route: "GET /rounds/:round_id", status_code: 404, aborted: undefined },
      caller: { kind: "user" },
      error: { type: "NOT_FOUND" },
    });
  });
});

describe("sampling", () => {
  it("when the rate is 0 or 1, then every request is out or in; in between, each is decided at random with that probability", () => {
    expect(Array.from({ length: 100 }, () => sampleRequest(0)).some(Boolean)).toBe(false);
    expect(Array.from({ length: 100 }, () => sampleRequest(1)).every(Boolean)).toBe(true);
    expect(sampleRequest(0.25, () => 0.2)).toBe(true);
    expect(sampleRequest(0.25, () => 0.25)).toBe(false);
    // Not Moleculer's counter, which keeps every fourth at a rate of 0.3: 10,000 draws land near 3,000.
    const kept = Array.from({ length: 10_000 }, () => sampleRequest(0.3)).filter(Boolean).length;
    expect(kept).toBeGreaterThan(2500);
    expect(kept).toBeLessThan(3500);
  });

  it("when a fact is recorded by a request not sampled, then its context says so, in the entry and in its message headers", () => {
    const span = { traceID: "req-9", id: "span-1", sampled: false };
    const trace = traceContextOf({ span } as never);
    expect(trace).toEqual({ trace_id: "req-9", parent_id: "span-1", sampled: false });
    expect(traceContextOf({ span: { ...span, sampled: true } } as never)).toEqual({
      trace_id: "req-9",
      parent_id: "span-1",
    });
    expect(traceContextOf({ span: undefined } as never)).toBeUndefined();
    const hdrs = natsHeaders();
    for (const [k, v] of Object.entries(traceHeaders(trace!))) hdrs.set(k, v);
    expect(hdrs.get("$tracing")).toBe("false");
    expect(deliveredTrace({ headers: hdrs })).toEqual(trace);
  });

  it("when an embedded relay hands over a fact of a request not sampled, then it is handled without a span, even where the consumer's own rate would keep it", async () => {
    const col = await collector();
    const exporter = new BoundedZipkinExporter({ endpoint: col.url, intervalMs: 60_000, maxQueue: 100 });
    const handled: number[] = [];
    const broker = tracedBroker(exporter, [
      {
        name: "consumer",
        channels: {
          "some.fact": {
            group: "consumer",
            handler: factHandler(
              { name: "some.fact", group: "consumer" },
              { type: "object", required: ["n"], properties: { n: { type: "number" } } },
              async (payload: { n: number }) => void handled.push(payload.n),
            ),
          },
        },
      } as ServiceSchema,
    ]);
    await broker.start();
    try {
      const trace = {
        trace_id: "req-out",
        parent_id: "0b7a7f1e-9d55-4a4e-8f7e-3f1f5e2a9c11",
        sampled: false as const,
      };
      await channelPublisher(broker)(outboxEntry("some.fact", "a", { n: 1 }, new Date(), trace));
      expect(handled).toEqual([1]);
      expect(exporter.queue).toEqual([]);
    } finally {
      await broker.stop();
      await col.close();
    }
  });

  /** One HTTP request through traceRequest: it calls `work.run`, then is answered `status`. */
  async function request(
    broker: ServiceBroker,
    exporter: BoundedZipkinExporter,
    rate: number,
    status: number,
  ) {
    const gateway = broker.getLocalService("gateway")!;
    const req = Object.assign(new EventEmitter(), {
      method: "GET",
      url: "/rounds/r1",
    }) as unknown as TracedRequest;
    const res = Object.assign(new EventEmitter(), {
      headersSent: true,
      statusCode: status,
      writableFinished: true,
    }) as unknown as ServerResponse;
    const requestID = `req-${status}-${Math.random()}`;
    const ctx = broker.ContextFactory.create(broker, null as never, { req, res }, { requestID }) as Context<{
      req: TracedRequest;
      res: ServerResponse;
    }>;
    const spec = { method: "GET", path: "/rounds/:round_id", action: "rounds.get" } as RouteSpec;
    traceRequest(gateway, ctx, () => spec, rate);
    await ctx.call("work.run");
    (res as unknown as EventEmitter).emit("close");
    return exporter.queue.filter((s) => s.tags["request.id"] === requestID);
  }

  it("when the gateway samples a request out, then neither its span nor its calls' spans are exported, though the broker's own rate is 1; answered 5xx, its own span alone is, marked", async () => {
    const exporter = new BoundedZipkinExporter({
      endpoint: await deadUrl(),
      intervalMs: 60_000,
      maxQueue: 100,
    });
    const broker = tracedBroker(exporter, [
      { name: "gateway" },
      { name: "work", actions: { run: async () => "done" } },
    ]);
    await broker.start();
    try {
      expect(await request(broker, exporter, 0, 200)).toEqual([]);
      const failed = await request(broker, exporter, 0, 503);
      expect(failed).toHaveLength(1);
      expect(failed[0]).toMatchObject({
        name: "GET /rounds/:round_id",
        tags: { "http.status_code": "503", "sampling.kept": "5xx", error: "INTERNAL" },
      });
      const kept = await request(broker, exporter, 1, 200);
      expect(kept.map((s) => s.name).sort()).toEqual(["GET /rounds/:round_id", "action 'work.run'"]);
      expect(kept.find((s) => s.name === "GET /rounds/:round_id")!.tags["sampling.kept"]).toBeUndefined();
    } finally {
      await broker.stop();
    }
  });

  it("when the broker's own rate is 0 and the gateway samples a request in, then its calls follow and are exported", async () => {
    const exporter = new BoundedZipkinExporter({
      endpoint: await deadUrl(),
      intervalMs: 60_000,
      maxQueue: 100,
    });
    const broker = tracedBroker(
      exporter,
      [{ name: "gateway" }, { name: "work", actions: { run: async () => "done" } }],
      0,
    );
    await broker.start();
    try {
      const spans = await request(broker, exporter, 1, 200);
      expect(spans.map((s) => s.name).sort()).toEqual(["GET /rounds/:round_id", "action 'work.run'"]);
    } finally {
      await broker.stop();
    }
  });
});
