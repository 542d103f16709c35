/**
 * OtlpSpanExporter (a TRACING_ENDPOINT ending in /v1/traces): Moleculer spans as OTLP spans with the right ids, parent,
 * kind, times, status, attributes and resource, decoded from what a stand-in collector received over
 * OTLP/HTTP JSON; and the bounds OpenTelemetry's batch processor and exporter keep with a collector that
 * is down or never answers (one warning per outage, a queue that never grows past its bound).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { ServiceBroker, type Context, type ServiceSchema } from "moleculer";
import { w3cTraceId, zipkinSpanId } from "../../../../shared/tracing";
import { OtlpSpanExporter } from "../../../../shared/tracing/otlp-exporter";
import { startOtlpCollector, type OtlpCollector } from "../../../support/otlp-collector";

const HEX32 = /^[0-9a-f]{32}$/;
const HEX16 = /^[0-9a-f]{16}$/;

function tracedBroker(exporter: OtlpSpanExporter, services: ServiceSchema[] = []): ServiceBroker {
  const broker = new ServiceBroker({
    logger: false,
    nodeID: "unit-node",
    tracing: {
      enabled: true,
      events: true,
      sampling: { rate: 1 },
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

/** A URL where nothing listens. */
async function deadUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return `http://127.0.0.1:${port}/v1/traces`;
}

describe("OtlpSpanExporter", () => {
  let col: OtlpCollector;
  beforeEach(async () => {
    col = await startOtlpCollector();
  });
  afterEach(() => col.close());

  it("when actions call each other and emit an event, then the collector decodes OTLP spans of one trace with parent links, kinds, times, attributes and each service as its resource", async () => {
    const exporter = new OtlpSpanExporter({ endpoint: col.url, intervalMs: 60_000, maxQueue: 100 });
    const broker = tracedBroker(exporter, [
      {
        name: "outer",
        actions: {
          run: async (ctx: Context<{ token: string }>) => {
            await ctx.emit("thing.happened", { secret: ctx.params.token });
            return ctx.call("inner.run", { token: ctx.params.token });
          },
        },
      },
      { name: "inner", actions: { run: () => "ok" } },
      { name: "listener", events: { "thing.happened": () => undefined } },
    ]);
    await broker.start();
    const before = BigInt(Date.now()) * 1_000_000n;
    try {
      await broker.call("outer.run", { token: "secret-token-123" }, { requestID: "my request" });
      await exporter.flush();
    } finally {
      await broker.stop();
    }
    const after = BigInt(Date.now()) * 1_000_000n;
    expect(col.contentTypes[0]).toMatch(/^application\/json/);
    const spans = col.spans;
    expect(spans).toHaveLength(3);
    const outer = spans.find((s) => s.name === "action 'outer.run'")!;
    const inner = spans.find((s) => s.name === "action 'inner.run'")!;
    const handler = spans.find((s) => s.name === "event 'thing.happened' in 'listener'")!;
    for (const s of spans) {
      expect(s.traceId).toMatch(HEX32);
      expect(s.spanId).toMatch(HEX16);
      expect(s.traceId).toBe(w3cTraceId("my request"));
      expect(s.startTimeUnixNano).toBeGreaterThanOrEqual(before - 1_000_000n);
      expect(s.endTimeUnixNano).toBeGreaterThanOrEqual(s.startTimeUnixNano);
      expect(s.endTimeUnixNano).toBeLessThanOrEqual(after + 1_000_000n);
      expect(s.attributes["request.id"]).toBe("my request");
      expect(s.attributes["node.id"]).toBe("unit-node");
      expect(s.resource["service.instance.id"]).toBe("unit-node");
      expect(s.scope.name).toBe("moleculer");
      expect(s.status.code ?? 0).toBe(0);
    }
    expect(outer.parentSpanId).toBeUndefined();
    expect(inner.parentSpanId).toBe(outer.spanId);
    expect(handler.parentSpanId).toBe(outer.spanId);
    // SERVER for calls, CONSUMER for a message nobody waits on.
    expect([outer.kind, inner.kind, handler.kind]).toEqual([2, 2, 5]);
    expect([outer, inner, handler].map((s) => s.resource["service.name"])).toEqual([
      "outer",
      "inner",
      "listener",
    ]);
    expect(inner.attributes["action.name"]).toBe("inner.run");
    expect(col.bodies.join("")).not.toContain("secret-token-123");
  });

  it("when an action fails, then its span's status is ERROR with the type, and its error attributes are name, type, code and message, never its data", async () => {
    const exporter = new OtlpSpanExporter({ endpoint: col.url, intervalMs: 60_000, maxQueue: 100 });
    const broker = tracedBroker(exporter, [
      {
        name: "bad",
        actions: {
          run: () => {
            const err = Object.assign(new Error("nope"), {
              code: 409,
              type: "ROUND_FULL",
              data: { password: "pw-999" },
            });
            throw err;
          },
        },
      },
    ]);
    await broker.start();
    await broker.call("bad.run").catch(() => undefined);
    await exporter.flush();
    await broker.stop();
    const [span] = col.spans;
    expect(span.status).toEqual({ code: 2, message: "ROUND_FULL" });
    expect(span.attributes).toMatchObject({
      error: "ROUND_FULL",
      "error.type": "ROUND_FULL",
      "error.name": "Error",
      "error.code": "409",
      "error.message": "nope",
    });
    expect(col.bodies.join("")).not.toContain("pw-999");
  });

  it("when a span continues a caller's 16-digit (B3) trace id, then OTLP gets it padded to 32 digits and the caller's span as parent", async () => {
    const exporter = new OtlpSpanExporter({ endpoint: col.url, intervalMs: 60_000, maxQueue: 100 });
    const broker = tracedBroker(exporter);
    broker.tracer
      .startSpan("continued", { traceID: "80f198ee56343ba8", parentID: "e457b5a2e4d86bd1", sampled: true })
      .finish();
    await exporter.flush();
    await broker.stop();
    expect(col.spans[0]).toMatchObject({
      traceId: "000000000000000080f198ee56343ba8",
      parentSpanId: "e457b5a2e4d86bd1",
    });
    expect(col.spans[0].spanId).toBe(zipkinSpanId(col.spans[0].spanId));
  });

  it("when the endpoint has user:password in it, then they go as Basic auth and the logged URL leaves them out", async () => {
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(String(req.headers.authorization));
      req.resume();
      req.on("end", () => res.writeHead(503).end());
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    const exporter = new OtlpSpanExporter({
      endpoint: `http://tracer:s3cret@127.0.0.1:${port}/v1/traces`,
      intervalMs: 60_000,
      maxQueue: 100,
      timeoutMs: 300,
    });
    const broker = tracedBroker(exporter);
    const warn = jest.spyOn(exporter.logger, "warn").mockImplementation(() => undefined);
    finishSpans(broker, 1);
    await exporter.flush();
    await broker.stop();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    expect(seen[0]).toBe(`Basic ${Buffer.from("tracer:s3cret").toString("base64")}`);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0][0])).not.toContain("s3cret");
    expect(String(warn.mock.calls[0][0])).toContain(`127.0.0.1:${port}/v1/traces`);
  });

  it("when the collector is down, then batches are dropped, one warning covers the whole outage, the queue never grows past its bound, and its return is logged once with the count", async () => {
    const exporter = new OtlpSpanExporter({
      endpoint: await deadUrl(),
      intervalMs: 100,
      maxQueue: 20,
      batchSize: 10,
      timeoutMs: 300,
    });
    const broker = tracedBroker(exporter);
    const warn = jest.spyOn(exporter.logger, "warn").mockImplementation(() => undefined);
    const info = jest.spyOn(exporter.logger, "info").mockImplementation(() => undefined);
    const started = Date.now();
    for (let i = 0; i < 5; i++) {
      // More than the queue holds, faster than the batches can fail.
      finishSpans(broker, 30);
      expect(exporter.queued).toBeLessThanOrEqual(20);
      await new Promise((r) => setTimeout(r, 400));
      expect(exporter.queued).toBeLessThanOrEqual(20);
    }
    // What the queue still holds is tried and dropped within a few time-outs.
    for (let i = 0; i < 40 && exporter.dropped < 150; i++) await new Promise((r) => setTimeout(r, 100));
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(exporter.exported).toBe(0);
    expect(exporter.dropped).toBe(150);
    expect(exporter.queued).toBe(0);
    const failures = warn.mock.calls.map((c) => String(c[0])).filter((m) => m.includes("could not be sent"));
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatch(/ECONNREFUSED/);
    expect(info).not.toHaveBeenCalled();
    await broker.stop();
  });

  it("when the collector refuses batches and then accepts them, then one warning, then one info line with the dropped count", async () => {
    col.state.status = 400;
    const exporter = new OtlpSpanExporter({ endpoint: col.url, intervalMs: 60_000, maxQueue: 100 });
    const broker = tracedBroker(exporter);
    const warn = jest.spyOn(exporter.logger, "warn").mockImplementation(() => undefined);
    const info = jest.spyOn(exporter.logger, "info").mockImplementation(() => undefined);
    for (let i = 0; i < 3; i++) {
      finishSpans(broker, 2);
      await exporter.flush();
    }
    col.state.status = 200;
    finishSpans(broker, 4);
    await exporter.flush();
    await broker.stop();
    expect(warn).toHaveBeenCalledTimes(1);
    expect(info).toHaveBeenCalledTimes(1);
    expect(String(info.mock.calls[0][0])).toContain("6 were dropped");
    expect(exporter.exported).toBe(4);
    expect(col.spans).toHaveLength(4);
  });

  it("when the collector never answers, then the batch is abandoned after the timeout and its spans dropped", async () => {
    col.state.hang = true;
    const exporter = new OtlpSpanExporter({
      endpoint: col.url,
      intervalMs: 60_000,
      maxQueue: 100,
      timeoutMs: 300,
    });
    const broker = tracedBroker(exporter);
    jest.spyOn(exporter.logger, "warn").mockImplementation(() => undefined);
    finishSpans(broker, 3);
    const started = Date.now();
    await exporter.flush();
    expect(Date.now() - started).toBeLessThan(2000);
    // The exporter's own time-out reports the batch failed shortly after the processor stops waiting.
    for (let i = 0; i < 20 && exporter.dropped < 3; i++) await new Promise((r) => setTimeout(r, 100));
    expect(exporter.dropped).toBe(3);
    await broker.stop();
  });

  it("when the broker stops, then what is queued is sent, and a hanging collector holds the stop no longer than the bound", async () => {
    const exporter = new OtlpSpanExporter({ endpoint: col.url, intervalMs: 60_000, maxQueue: 100 });
    const broker = tracedBroker(exporter);
    await broker.start();
    finishSpans(broker, 3);
    await broker.stop();
    expect(col.spans).toHaveLength(3);

    col.state.hang = true;
    const hanging = new OtlpSpanExporter({
      endpoint: col.url,
      intervalMs: 60_000,
      maxQueue: 100,
      timeoutMs: 300,
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
});
