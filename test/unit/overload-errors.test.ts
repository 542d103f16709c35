import { Errors } from "moleculer";
import { toHttpError } from "../../services/gateway/http-errors";

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
