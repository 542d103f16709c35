/** TRACING_EXPORTER (shared/config): which format TRACING_ENDPOINT speaks. */
import { loadConfig } from "../../../../shared/config";
import { ConfigError } from "../../../../shared/errors";

describe("TRACING_EXPORTER", () => {
  it("when it is unset, then spans go as Zipkin v2, as before; otlp is taken; anything else is a ConfigError", () => {
    expect(loadConfig({}).tracingExporter).toBe("zipkin");
    expect(loadConfig({ TRACING_EXPORTER: "otlp" }).tracingExporter).toBe("otlp");
    expect(() => loadConfig({ TRACING_EXPORTER: "jaeger" })).toThrow(ConfigError);
    expect(() => loadConfig({ TRACING_EXPORTER: "jaeger" })).toThrow(
      "TRACING_EXPORTER must be one of zipkin, otlp",
    );
  });
});
