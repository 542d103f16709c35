/** The broker's tracing options (shared/tracing/index.ts): the exporter TRACING_ENDPOINT's path names. */
import { loadConfig } from "../../../../shared/config";
import { BoundedZipkinExporter, tracingFormatOf, tracingOptions } from "../../../../shared/tracing";
import { OtlpSpanExporter } from "../../../../shared/tracing/otlp-exporter";

const exporterOf = (env: Record<string, string>) =>
  (tracingOptions(loadConfig(env)) as { exporter: unknown[] }).exporter[0];

describe("tracing options", () => {
  it("when TRACING_ENDPOINT's path ends in /v1/traces, then OpenTelemetry's OTLP exporter sends behind ours; any other path, the bounded Zipkin exporter", () => {
    expect(exporterOf({ TRACING_ENDPOINT: "http://collector:4318/v1/traces" })).toBeInstanceOf(
      OtlpSpanExporter,
    );
    expect(exporterOf({ TRACING_ENDPOINT: "http://zipkin:9411/api/v2/spans" })).toBeInstanceOf(
      BoundedZipkinExporter,
    );
  });

  it("when the path ends in /v1/traces, with a slash or a query after it, then OTLP; with more path after it, or another path, Zipkin", () => {
    expect(tracingFormatOf("https://otel.example.com/tenant-a/v1/traces/")).toBe("otlp");
    expect(tracingFormatOf("http://collector:4318/v1/traces?x=1")).toBe("otlp");
    expect(tracingFormatOf("http://collector:4318/v1/traces/more")).toBe("zipkin");
    expect(tracingFormatOf("http://collector:4318/")).toBe("zipkin");
  });

  it("when TRACING_ENDPOINT is empty, then tracing is off", () => {
    expect(tracingOptions(loadConfig({}))).toEqual({ enabled: false });
  });
});
