import { Errors } from "moleculer";
import { countsAgainstNode } from "../../../../app/broker-options";
import { toHttpError } from "../../../../services/gateway/http-errors";

describe("overload protection answers", () => {
  it("when a bulkhead queue is full, then 503 Service Unavailable with Retry-After", () => {
    const mapped = toHttpError(
      new Errors.QueueIsFullError({ action: "rounds.join", nodeID: "n1", size: 1000, limit: 1000 }),
    );
    expect(mapped).toEqual({
      status: 503,
      body: { detail: "Service Unavailable" },
      headers: { "Retry-After": "1" },
    });
  });

  it("when the circuit of every node of an action is open, then 503 Service Unavailable", () => {
    const mapped = toHttpError(new Errors.ServiceNotAvailableError({ action: "rounds.get", nodeID: "n1" }));
    expect(mapped.status).toBe(503);
    expect(mapped.body).toEqual({ detail: "Service Unavailable" });
  });
});

describe("what counts against a node's circuit breaker", () => {
  it("when a call fails with the node's own server-side error, then it counts; a client error does not", () => {
    expect(countsAgainstNode({ code: 500, type: "MOLECULER_ERROR" })).toBe(true);
    expect(countsAgainstNode({ code: 503, type: "STORE_UNAVAILABLE" })).toBe(true);
    expect(countsAgainstNode({ code: 409, type: "CONFLICT" })).toBe(false);
  });

  it("when a call never reached the node or lost its answer across a NATS outage, then it does not count", () => {
    expect(countsAgainstNode(new Errors.RequestRejectedError({ action: "rounds.join", nodeID: "r" }))).toBe(
      false,
    );
  });
});
