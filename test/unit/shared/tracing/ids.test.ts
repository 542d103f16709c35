/** W3C and OTLP trace ids beside Zipkin's (shared/tracing/ids.ts; Zipkin's own cases: test/unit/tracing.test.ts). */
import { traceparentOf, w3cTraceId, zipkinSpanId, zipkinTraceId } from "../../../../shared/tracing";

describe("W3C trace ids", () => {
  it("when a trace id is 32 hex digits, a UUID or any other request id, then it is Zipkin's, always 32 digits", () => {
    const w3c = "4bf92f3577b34da6a3ce929d0e0e4736";
    expect(w3cTraceId(w3c)).toBe(w3c);
    expect(w3cTraceId("0b7a7f1e-9d55-4a4e-8f7e-3f1f5e2a9c11")).toBe("0b7a7f1e9d554a4e8f7e3f1f5e2a9c11");
    expect(w3cTraceId("my request")).toBe(zipkinTraceId("my request"));
  });

  it("when a trace id is 16 hex digits (B3), then it is padded on the left with zeros", () => {
    expect(w3cTraceId("80F198EE56343BA8")).toBe("000000000000000080f198ee56343ba8");
  });

  it("when a traceparent is made, then it is version 00, sampled, with the span's 16-digit id", () => {
    const span = "0b7a7f1e-9d55-4a4e-8f7e-3f1f5e2a9c11";
    expect(traceparentOf("80f198ee56343ba8", span)).toBe(
      `00-000000000000000080f198ee56343ba8-${zipkinSpanId(span)}-01`,
    );
  });
});
