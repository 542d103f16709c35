/**
 * What a MongoDB without a primary (a replica-set election, a lost network) looks like to a client: the
 * engine turns the driver's failure, once the driver's own retry has failed too, into a 503 with
 * Retry-After instead of an unexplained 500. No replica set runs here, so the driver's errors are built
 * as the driver builds them.
 */
import mongoose from "mongoose";
import { StoreUnavailableError } from "../../../../shared/errors";
import { DuplicateKeyError } from "../../../../shared/storage";
import { isStoreUnavailable, storeError } from "../../../../shared/storage/mongo";
import { toHttpError } from "../../../../services/gateway/http-errors";

const m = mongoose.mongo;
const serverError = (code: number, errorLabels: string[] = []) =>
  new m.MongoServerError({ message: `server error ${code}`, code, errorLabels });

describe("the MongoDB engine's errors", () => {
  it.each([
    ["a lost connection", new m.MongoNetworkError("connection closed")],
    ["a timed-out socket", new m.MongoNetworkTimeoutError("timed out")],
    [
      "no primary elected in time",
      new m.MongoServerSelectionError("Server selection timed out", {} as never),
    ],
    ["a write refused by a stepped-down primary", serverError(10107, ["RetryableWriteError"])],
    ["a read interrupted by a step-down", serverError(11602)],
    ["a primary stepping down", serverError(189)],
    ["a node shutting down", serverError(91)],
  ])("when the driver fails with %s, then the store is unavailable (503, retry later)", (_label, err) => {
    expect(isStoreUnavailable(err)).toBe(true);
    const translated = storeError(err);
    expect(translated).toBeInstanceOf(StoreUnavailableError);
    expect(translated).toMatchObject({ code: 503, type: "STORE_UNAVAILABLE", retryable: false });
  });

  it("when a unique index refuses a write, then it is a duplicate key, not an outage", () => {
    expect(isStoreUnavailable(serverError(11000))).toBe(false);
    expect(storeError(serverError(11000))).toBeInstanceOf(DuplicateKeyError);
  });

  it.each([
    ["a malformed update", serverError(9)],
    ["a plain programming error", new TypeError("x is not a function")],
  ])("when the failure is %s, then it passes through unchanged (a fault of ours: 500, logged)", (_l, err) => {
    expect(isStoreUnavailable(err)).toBe(false);
    expect(storeError(err)).toBe(err);
  });

  it("when the gateway maps a StoreUnavailableError (as it arrives over the transporter), then 503 Service Unavailable with Retry-After: 1, not an unexpected fault", () => {
    const err = new StoreUnavailableError(new m.MongoNetworkError("connection closed"));
    const overTheWire = { code: err.code, type: err.type, message: err.message, data: err.data };
    for (const e of [err, overTheWire]) {
      const mapped = toHttpError(e);
      expect(mapped).toEqual({
        status: 503,
        body: { detail: "Service Unavailable" },
        headers: { "Retry-After": "1" },
      });
    }
  });
});
