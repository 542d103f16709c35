/**
 * The caller's trace context the gateway continues (decision 0143): W3C traceparent, B3 single and B3
 * multi; anything malformed is no context at all (a trace of the gateway's own), never an error.
 */
import {
  incomingTrace,
  parseB3Multi,
  parseB3Single,
  parseTraceparent,
} from "../../../../services/gateway/trace-context";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN = "00f067aa0ba902b7";

describe("trace context from request headers", () => {
  it("when a traceparent is well formed, then its trace id, parent span and sampled flag are read", () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({
      traceId: TRACE,
      spanId: SPAN,
      sampled: true,
    });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)).toEqual({
      traceId: TRACE,
      spanId: SPAN,
      sampled: false,
    });
    // Other flag bits say nothing of sampling.
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-03`)?.sampled).toBe(true);
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-02`)?.sampled).toBe(false);
    // A later version may add fields after the flags.
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01-what-comes-later`)?.traceId).toBe(TRACE);
  });

  it("when a traceparent is malformed, then it is no context", () => {
    for (const bad of [
      "",
      "garbage",
      `00-${TRACE}-${SPAN}`,
      `00-${TRACE}-${SPAN}-01-extra`,
      `ff-${TRACE}-${SPAN}-01`,
      `00-${"0".repeat(32)}-${SPAN}-01`,
      `00-${TRACE}-${"0".repeat(16)}-01`,
      `00-${TRACE.toUpperCase()}-${SPAN}-01`,
      `00-${TRACE.slice(0, 16)}-${SPAN}-01`,
      `00-${TRACE}-${SPAN}-0g`,
      `00-${TRACE}-${SPAN}-01, 00-${TRACE}-${SPAN}-01`,
    ]) {
      expect({ bad, trace: parseTraceparent(bad) }).toEqual({ bad, trace: undefined });
    }
  });

  it("when a b3 header is well formed, then its ids and sampling state are read; without a state the decision is deferred", () => {
    expect(parseB3Single(`${TRACE}-${SPAN}-1`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true });
    expect(parseB3Single(`${TRACE}-${SPAN}-0-e457b5a2e4d86bd1`)).toEqual({
      traceId: TRACE,
      spanId: SPAN,
      sampled: false,
    });
    expect(parseB3Single(`${TRACE}-${SPAN}-d`)?.sampled).toBe(true);
    expect(parseB3Single(`80f198ee56343ba8-${SPAN}`)).toEqual({
      traceId: "80f198ee56343ba8",
      spanId: SPAN,
      sampled: undefined,
    });
  });

  it("when a b3 header is malformed or a bare decision, then it is no context", () => {
    for (const bad of [
      "0",
      "1",
      "d",
      `${TRACE}`,
      `${TRACE}-${SPAN}-x`,
      `${TRACE}-${SPAN}-`,
      `${TRACE}-zz`,
      `${TRACE}-${SPAN}-1-nothex`,
      `${TRACE}-${SPAN}-1-${SPAN}-more`,
      `${"0".repeat(32)}-${SPAN}-1`,
    ]) {
      expect({ bad, trace: parseB3Single(bad) }).toEqual({ bad, trace: undefined });
    }
  });

  it("when X-B3-* headers are well formed, then their ids and decision are read (X-B3-Flags: 1 is debug, sampled)", () => {
    expect(parseB3Multi({ "x-b3-traceid": TRACE, "x-b3-spanid": SPAN, "x-b3-sampled": "1" })).toEqual({
      traceId: TRACE,
      spanId: SPAN,
      sampled: true,
    });
    expect(parseB3Multi({ "x-b3-traceid": TRACE, "x-b3-spanid": SPAN, "x-b3-sampled": "0" })?.sampled).toBe(
      false,
    );
    expect(parseB3Multi({ "x-b3-traceid": TRACE, "x-b3-spanid": SPAN })?.sampled).toBeUndefined();
    expect(parseB3Multi({ "x-b3-traceid": TRACE, "x-b3-spanid": SPAN, "x-b3-flags": "1" })?.sampled).toBe(
      true,
    );
    expect(parseB3Multi({ "x-b3-traceid": TRACE })).toBeUndefined();
    expect(parseB3Multi({ "x-b3-traceid": "nothex", "x-b3-spanid": SPAN })).toBeUndefined();
    expect(
      parseB3Multi({ "x-b3-traceid": TRACE, "x-b3-spanid": SPAN, "x-b3-sampled": "maybe" }),
    ).toBeUndefined();
  });

  it("when several are sent, then traceparent wins over b3, and b3 over X-B3-*; a malformed one leaves the next its turn", () => {
    const other = "a".repeat(32);
    const headers = {
      traceparent: `00-${TRACE}-${SPAN}-01`,
      b3: `${other}-${SPAN}-0`,
      "x-b3-traceid": other,
      "x-b3-spanid": SPAN,
    };
    expect(incomingTrace(headers)?.traceId).toBe(TRACE);
    expect(incomingTrace({ ...headers, traceparent: "junk" })).toEqual({
      traceId: other,
      spanId: SPAN,
      sampled: false,
    });
    expect(incomingTrace({ "x-b3-traceid": other, "x-b3-spanid": SPAN, b3: "junk" })?.traceId).toBe(other);
    expect(incomingTrace({})).toBeUndefined();
    expect(incomingTrace({ traceparent: `00-${TRACE}-${SPAN}-01`.padEnd(300, "x") })).toBeUndefined();
  });
});
