/** The broker's tracing options (shared/tracing/index.ts): the exporter TRACING_EXPORTER names. */
import { loadConfig } from "../../../../shared/config";
import { BoundedZipkinExporter, tracingOptions } from "../../../../shared/tracing";
import { OtlpSpanExporter } from "../../../../shared/tracing/otlp-exporter";

const exporterOf = (env: Record<string, string>) =>
  (tracingOptions(loadConfig(env)) as { exporter: unknown[] }).exporter[0];

describe("tracing options", () => {
  it("when TRACING_EXPORTER is zipkin or unset, then the bounded Zipkin exporter sends; otlp, OpenTelemetry's OTLP exporter behind ours", () => {
    const endpoint = "http://collector:4318/v1/traces";
    expect(exporterOf({ TRACING_ENDPOINT: endpoint })).toBeInstanceOf(BoundedZipkinExporter);
    expect(exporterOf({ TRACING_ENDPOINT: endpoint, TRACING_EXPORTER: "zipkin" })).toBeInstanceOf(
      BoundedZipkinExporter,
    );
    expect(exporterOf({ TRACING_ENDPOINT: endpoint, TRACING_EXPORTER: "otlp" })).toBeInstanceOf(
      OtlpSpanExporter,
    );
  });

  it("when TRACING_ENDPOINT is empty, then tracing is off whatever the exporter", () => {
    expect(tracingOptions(loadConfig({ TRACING_EXPORTER: "otlp" }))).toEqual({ enabled: false });
  });
});
