/**
 * A stand-in OpenTelemetry collector: an HTTP server taking OTLP/HTTP JSON at /v1/traces (the path that
 * makes TRACING_ENDPOINT an OTLP one) and decoding every span with its resource and scope. `status`
 * decides the answer, `hang` never answers.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

/** One OTLP span, flattened: attributes and resource attributes as plain values. */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** OTLP's SpanKind: 2 SERVER, 5 CONSUMER. */
  kind: number;
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
  attributes: Record<string, unknown>;
  status: { code?: number; message?: string };
  resource: Record<string, unknown>;
  scope: { name?: string; version?: string };
}

interface KeyValue {
  key: string;
  value: Record<string, unknown>;
}

/** An OTLP AnyValue (JSON encoding) as a plain value. */
function plain(value: Record<string, unknown>): unknown {
  if ("stringValue" in value) return value.stringValue;
  if ("boolValue" in value) return value.boolValue;
  if ("intValue" in value) return Number(value.intValue);
  if ("doubleValue" in value) return Number(value.doubleValue);
  return value;
}

const attributesOf = (list: KeyValue[] | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, plain(kv.value)]));

/** The spans of one ExportTraceServiceRequest in OTLP's JSON encoding. */
export function decodeOtlpJson(body: string): OtlpSpan[] {
  const request = JSON.parse(body) as {
    resourceSpans: Array<{
      resource?: { attributes?: KeyValue[] };
      scopeSpans: Array<{
        scope?: { name?: string; version?: string };
        spans: Array<Record<string, unknown>>;
      }>;
    }>;
  };
  const out: OtlpSpan[] = [];
  for (const rs of request.resourceSpans) {
    const resource = attributesOf(rs.resource?.attributes);
    for (const ss of rs.scopeSpans) {
      for (const s of ss.spans) {
        out.push({
          traceId: s.traceId as string,
          spanId: s.spanId as string,
          parentSpanId: (s.parentSpanId as string | undefined) || undefined,
          name: s.name as string,
          kind: s.kind as number,
          startTimeUnixNano: BigInt(s.startTimeUnixNano as string),
          endTimeUnixNano: BigInt(s.endTimeUnixNano as string),
          attributes: attributesOf(s.attributes as KeyValue[]),
          status: (s.status as OtlpSpan["status"]) ?? {},
          resource,
          scope: ss.scope ?? {},
        });
      }
    }
  }
  return out;
}

export interface OtlpCollector {
  url: string;
  spans: OtlpSpan[];
  /** Every request's raw body and content type. */
  bodies: string[];
  contentTypes: string[];
  /** Requests received, accepted or not. */
  requests: number;
  state: { status: number; hang: boolean };
  close(): Promise<void>;
}

export async function startOtlpCollector(): Promise<OtlpCollector> {
  const collector = {
    spans: [] as OtlpSpan[],
    bodies: [] as string[],
    contentTypes: [] as string[],
    requests: 0,
    state: { status: 200, hang: false },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      collector.requests++;
      if (collector.state.hang) return;
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      const body = Buffer.concat(chunks).toString("utf8");
      if (collector.state.status < 300) {
        collector.bodies.push(body);
        collector.contentTypes.push(String(req.headers["content-type"]));
        collector.spans.push(...decodeOtlpJson(body));
      }
      res.writeHead(collector.state.status, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return Object.assign(collector, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  });
}
