/**
 * A caller's trace is continued (decision 0143): a request that comes with a W3C `traceparent`, a B3
 * `b3` header or `X-B3-*` headers is traced in the caller's trace, its span the parent of the gateway's,
 * and the caller's sampled flag decides whatever TRACING_SAMPLE_RATE says; a traced request's answer
 * carries `traceparent`; malformed headers start a trace of the gateway's own. One system sends OTLP at a
 * rate of 0 (only a caller's "yes" is traced), another Zipkin at a rate of 1 (only a caller's "no" is not).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { TRACING_INTERVAL_MS, zipkinTraceId, type ZipkinSpan } from "../../shared/tracing";
import { startOtlpCollector, type OtlpCollector, type OtlpSpan } from "../support/otlp-collector";
import { api, startSystem, type System } from "../support/system";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;
/** A span id of the caller's (the ingress's span that called the gateway). */
const CALLER_SPAN = "00f067aa0ba902b7";
const newTraceId = () =>
  [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, "0")).join("");

/**
 * Sends what the system's exporters hold now rather than at their next batch (TRACING_INTERVAL_MS, 5 s):
 * in one process, through each exporter's `flush()`; across processes (the cluster topology), which
 * this process cannot reach, by waiting out an interval and a margin.
 */
async function sendSpans(sys: System): Promise<void> {
  if (sys.cluster) {
    await sleep(TRACING_INTERVAL_MS + 1000);
    return;
  }
  // Spans end a moment after their answer.
  await sleep(200);
  const { exporter } = (sys.broker as unknown as { tracer: { exporter: Array<{ flush(): Promise<void> }> } })
    .tracer;
  await Promise.all(exporter.map((e) => e.flush()));
}

/** Sends the system's spans until `pick` finds what it wants in what arrived (or 10 s passed). */
async function eventually<T>(sys: System, pick: () => T, done: (t: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  let value = pick();
  while (!done(value) && Date.now() < deadline) {
    await sendSpans(sys);
    value = pick();
  }
  return value;
}

const read = (sys: System, headers: Record<string, string>) =>
  api(sys, "GET", `/rounds/${sys.manifest.rounds.open}`, {
    token: sys.manifest.users.alice.access_token,
    headers,
  });

describe("a caller's trace context, sampled at a rate of 0 (OTLP)", () => {
  let collector: OtlpCollector;
  let sys: System;

  beforeAll(async () => {
    collector = await startOtlpCollector();
    sys = await startSystem({
      env: {
        TRACING_ENDPOINT: collector.url,
        TRACING_SAMPLE_RATE: "0",
        // Every read asks rounds (the gateway would answer a repeated read itself).
        RESPONSE_CACHE_MS: "0",
      },
    });
  }, 60_000);
  afterAll(async () => {
    await sys?.stop();
    await collector?.close();
  });

  const traceOf = (traceId: string) =>
    eventually(
      sys,
      () => collector.spans.filter((s) => s.traceId === traceId),
      (spans) =>
        spans.some((s) => s.resource["service.name"] === "gateway") &&
        spans.some((s) => s.resource["service.name"] === "rounds"),
    );

  /** The gateway's span is the caller's span's child, every other span hangs below it. */
  function expectContinued(spans: OtlpSpan[], answer: Headers, traceId: string): OtlpSpan {
    const gateway = spans.find(
      (s) => s.resource["service.name"] === "gateway" && s.name === "GET /rounds/:round_id",
    )!;
    expect(gateway).toBeDefined();
    expect(gateway.parentSpanId).toBe(CALLER_SPAN);
    expect(gateway.kind).toBe(2);
    expect(gateway.attributes["http.status_code"]).toBe(200);
    const ids = new Set(spans.map((s) => s.spanId));
    for (const s of spans) if (s !== gateway) expect(ids).toContain(s.parentSpanId);
    expect(spans.filter((s) => s.resource["service.name"] === "rounds").length).toBeGreaterThan(0);
    expect(answer.get("traceparent")).toBe(`00-${traceId}-${gateway.spanId}-01`);
    return gateway;
  }

  it("when a sampled traceparent comes, then the gateway and the service it calls send spans of the caller's trace, the gateway's a child of the caller's span, and the answer names it in traceparent", async () => {
    const traceId = newTraceId();
    const res = await read(sys, { traceparent: `00-${traceId}-${CALLER_SPAN}-01` });
    expect(res.status).toBe(200);
    expectContinued(await traceOf(traceId), res.headers, traceId);
    // The request id is the trace id: log lines and X-Request-ID name the caller's trace.
    expect(res.headers.get("x-request-id")).toBe(traceId);
  });

  it("when a sampled b3 header comes with a 16-digit trace id, then the trace is continued (the id padded to 32 digits in OTLP and traceparent)", async () => {
    const short = newTraceId().slice(0, 16);
    const res = await read(sys, { b3: `${short}-${CALLER_SPAN}-1` });
    expect(res.status).toBe(200);
    const padded = short.padStart(32, "0");
    expectContinued(await traceOf(padded), res.headers, padded);
  });

  it("when sampled X-B3-* headers come, then the trace is continued", async () => {
    const traceId = newTraceId();
    const res = await read(sys, { "X-B3-TraceId": traceId, "X-B3-SpanId": CALLER_SPAN, "X-B3-Sampled": "1" });
    expect(res.status).toBe(200);
    expectContinued(await traceOf(traceId), res.headers, traceId);
  });

  it("when a traceparent comes with the client's own X-Request-ID, then the trace is the caller's and the gateway's span keeps the client's id", async () => {
    const traceId = newTraceId();
    const res = await read(sys, {
      traceparent: `00-${traceId}-${CALLER_SPAN}-01`,
      "x-request-id": "client-req-42",
    });
    const gateway = expectContinued(await traceOf(traceId), res.headers, traceId);
    expect(gateway.attributes["request.client_id"]).toBe("client-req-42");
  });

  it("when no trace context, or a malformed one, comes, then the rate of 0 decides: no traceparent in the answer, no span sent", async () => {
    const before = collector.spans.length;
    const cases: Record<string, string>[] = [
      {},
      { traceparent: "00-nothex-01" },
      { b3: "1" },
      { "X-B3-TraceId": "x", "X-B3-SpanId": CALLER_SPAN },
    ];
    for (const headers of cases) {
      const res = await read(sys, headers);
      expect(res.status).toBe(200);
      expect(res.headers.get("traceparent")).toBeNull();
    }
    await sendSpans(sys);
    expect(collector.spans.length).toBe(before);
  });
});

describe("a caller's trace context, sampled at a rate of 1 (Zipkin)", () => {
  let server: http.Server;
  const spans: ZipkinSpan[] = [];
  let sys: System;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        spans.push(...(JSON.parse(body) as ZipkinSpan[]));
        res.writeHead(202).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    sys = await startSystem({
      env: {
        TRACING_ENDPOINT: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v2/spans`,
        TRACING_SAMPLE_RATE: "1",
      },
    });
  }, 60_000);
  afterAll(async () => {
    await sys?.stop();
    server?.closeAllConnections();
    await new Promise<void>((r) => server?.close(() => r()));
  });

  it("when the caller said not sampled (traceparent flags 00, b3 0, X-B3-Sampled 0), then nothing of the request is traced and the answer has no traceparent", async () => {
    const ids = [newTraceId(), newTraceId(), newTraceId()];
    const sent: Record<string, string>[] = [
      { traceparent: `00-${ids[0]}-${CALLER_SPAN}-00` },
      { b3: `${ids[1]}-${CALLER_SPAN}-0` },
      { "X-B3-TraceId": ids[2], "X-B3-SpanId": CALLER_SPAN, "X-B3-Sampled": "0" },
    ];
    for (const headers of sent) {
      const res = await read(sys, headers);
      expect(res.status).toBe(200);
      expect(res.headers.get("traceparent")).toBeNull();
    }
    // A request after them is traced: once its spans are in, theirs would be too.
    const after = await read(sys, {});
    const [, afterTrace] = TRACEPARENT.exec(after.headers.get("traceparent") ?? "")!;
    await eventually(
      sys,
      () => spans.filter((s) => s.traceId === afterTrace),
      (found) => found.length >= 2,
    );
    await sendSpans(sys);
    expect(spans.filter((s) => ids.includes(s.traceId))).toEqual([]);
  });

  it("when the headers are malformed, then the request starts a trace of its own, sampled at the rate, with no parent", async () => {
    const bad = newTraceId();
    const res = await read(sys, {
      traceparent: `00-${bad}-${"0".repeat(16)}-01`,
      "x-request-id": "malformed-ctx-1",
    });
    expect(res.status).toBe(200);
    const [, traceId, spanId] = TRACEPARENT.exec(res.headers.get("traceparent") ?? "")!;
    expect(traceId).not.toBe(bad);
    expect(traceId).toBe(zipkinTraceId("malformed-ctx-1"));
    const found = await eventually(
      sys,
      () => spans.filter((s) => s.traceId === traceId),
      (f) => f.some((s) => s.id === spanId),
    );
    const root = found.find((s) => s.id === spanId)!;
    expect(root.parentId).toBeUndefined();
    expect(root.localEndpoint.serviceName).toBe("gateway");
  });
});
