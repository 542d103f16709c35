/**
 * A store that cannot be written, from its error to what the gateway answers: the error class and its
 * mapping (507 with a detail that says why, as it arrives over the transporter too), which MongoDB
 * errors count as such, one report per change of state, the counter on /metrics, and the circuit
 * breaker leaving such failures alone. The engines' own part is in test/storage/nedb-disk.test.ts.
 */
import mongoose from "mongoose";
import { ServiceBroker } from "moleculer";
import { brokerOptions } from "../../../../app/broker-options";
import { toHttpError } from "../../../../services/gateway/http-errors";
import { loadConfig } from "../../../../shared/config";
import { StoreWriteError } from "../../../../shared/errors";
import { STORE_WRITE_ERRORS, storeWatch } from "../../../../shared/runtime/store-watch";
import { connectionOptions, mongoWriteFailure, storeError } from "../../../../shared/storage/mongo";
import { fsWriteFailure, WriteHealth, type StoreWatch } from "../../../../shared/storage/write-failures";
import { writeError } from "../../../support/failing-writes";

const m = mongoose.mongo;
const FULL = "Insufficient storage: the server's storage is full, so the change could not be saved";
const UNWRITABLE =
  "Insufficient storage: the server's storage cannot be written, so the change could not be saved";

/** What Moleculer sends of an error across the transporter (Regenerator.extractPlainError). */
const overTheWire = (err: StoreWriteError) => ({
  name: err.name,
  message: err.message,
  code: err.code,
  type: err.type,
  retryable: err.retryable,
  data: JSON.parse(JSON.stringify(err.data)) as unknown,
});

describe("StoreWriteError at the gateway", () => {
  it.each([
    ["full", FULL],
    ["unwritable", UNWRITABLE],
  ] as const)(
    "when the store is %s, then 507 with a detail saying so, no Retry-After, not logged as a fault, also after the transporter",
    (reason, detail) => {
      const err = new StoreWriteError(reason, { store: "rounds", code: "ENOSPC" });
      expect(err.retryable).toBe(false);
      for (const e of [err, overTheWire(err)]) {
        expect(toHttpError(e)).toEqual({ status: 507, body: { detail } });
      }
      expect(overTheWire(err).data).toEqual({ reason, store: "rounds", code: "ENOSPC" });
    },
  );

  it("when the broker's circuit breaker weighs a store write error, then it does not count it against the node, unlike other 5xx", () => {
    const check = brokerOptions(loadConfig({})).circuitBreaker?.check as (err: unknown) => boolean;
    const err = new StoreWriteError("full", { store: "rounds", code: "ENOSPC" });
    expect(check(err)).toBe(false);
    expect(check(overTheWire(err))).toBe(false);
    expect(check(Object.assign(new Error("boom"), { code: 500 }))).toBe(true);
    expect(check({ code: 503, type: "STORE_UNAVAILABLE" })).toBe(true);
  });
});

describe("which failures are store write failures", () => {
  it.each([
    ["ENOSPC", "full"],
    ["EDQUOT", "full"],
    ["EIO", "unwritable"],
    ["EROFS", "unwritable"],
  ])("when the file system refuses a write with %s, then the store is %s", (code, reason) => {
    expect(fsWriteFailure(writeError(code))).toEqual({ code, reason });
  });

  it("when an error has no system call behind it, then it is not a store write failure", () => {
    expect(fsWriteFailure(Object.assign(new Error("dup"), { errorType: "uniqueViolated" }))).toBeNull();
    expect(fsWriteFailure(Object.assign(new Error("x"), { code: "ENOSPC" }))).toBeNull();
    expect(fsWriteFailure(new TypeError("x is not a function"))).toBeNull();
  });

  const server = (
    code: number,
    codeName: string,
    message = `server error ${code}`,
    errorLabels: string[] = [],
  ) => new m.MongoServerError({ message, code, codeName, errorLabels });

  it.each([
    ["a full disk", server(14031, "OutOfDiskSpace"), { code: "OutOfDiskSpace", reason: "full" }],
    [
      "a hosted database over its quota",
      server(8000, "AtlasError", "you are over your space quota, using 513 MB of 512 MB"),
      { code: "AtlasError", reason: "full" },
    ],
    ["a user that may not write", server(13, "Unauthorized"), { code: "Unauthorized", reason: "unwritable" }],
    [
      "a write concern it could not satisfy",
      new m.MongoWriteConcernError({
        writeConcernError: {
          code: 64,
          codeName: "WriteConcernFailed",
          errmsg: "waiting for replication timed out",
        },
        ok: 1,
      }),
      { code: "WriteConcernFailed", reason: "unwritable" },
    ],
  ])("when MongoDB refuses a write for %s, then it is a store write failure", (_label, err, expected) => {
    expect(mongoWriteFailure(err)).toEqual(expected);
  });

  it.each([
    [
      "no primary (503, StoreUnavailable)",
      server(10107, "NotWritablePrimary", "not primary", ["RetryableWriteError"]),
    ],
    ["a duplicate key (a domain outcome)", server(11000, "DuplicateKey")],
    ["a malformed update (a fault of ours: 500)", server(9, "FailedToParse")],
    ["a lost connection", new m.MongoNetworkError("connection closed")],
  ])("when MongoDB fails with %s, then it is not a store write failure", (_label, err) => {
    expect(mongoWriteFailure(err)).toBeNull();
  });

  it("when MONGO_URI names a write concern, then MongoDB writes ask for exactly it, the journal included", () => {
    const withJournal = new m.MongoClient(
      "mongodb://127.0.0.1:1/db?w=majority&journal=true",
      connectionOptions(),
    );
    expect(withJournal.options.writeConcern).toMatchObject({ w: "majority", journal: true });
    const plain = new m.MongoClient("mongodb://127.0.0.1:1/db?w=majority", connectionOptions());
    expect(plain.options.writeConcern?.journal).toBeUndefined();
    expect(storeError(server(9, "FailedToParse"))).toBeInstanceOf(m.MongoServerError);
  });
});

describe("WriteHealth", () => {
  const recorder = () => {
    const heard: string[] = [];
    const watch: StoreWatch = {
      failed: (f) => heard.push(`failed ${f.code}`),
      failing: (f) => heard.push(`failing ${f.store} ${f.path} ${f.code}`),
      recovered: (r) => heard.push(`recovered ${r.store} after ${r.failures}`),
    };
    return { heard, watch };
  };

  it("when writes fail again and again, then the watch hears every failure but of the state only when it changes", () => {
    const { heard, watch } = recorder();
    const health = new WriteHealth("rounds", "/data/db/rounds.db", watch);
    health.succeeded();
    for (const code of ["ENOSPC", "ENOSPC", "ENOSPC", "EIO"]) health.failed(code, "full", writeError(code));
    health.succeeded();
    health.succeeded();
    expect(heard).toEqual([
      "failing rounds /data/db/rounds.db ENOSPC",
      "failed ENOSPC",
      "failed ENOSPC",
      "failed ENOSPC",
      "failing rounds /data/db/rounds.db EIO",
      "failed EIO",
      "recovered rounds after 4",
    ]);
  });

  it("when the watch throws, then the caller still gets its error", () => {
    const boom = () => {
      throw new Error("logger gone");
    };
    const health = new WriteHealth("rounds", "x", { failed: boom, failing: boom, recovered: boom });
    expect(health.failed("EIO", "unwritable", writeError("EIO"))).toBeInstanceOf(StoreWriteError);
    expect(() => health.succeeded()).not.toThrow();
  });
});

describe("storeWatch", () => {
  it("when a broker with metrics hears of failed writes, then store_write_errors_total counts them by store and code, and each change of state is one log line naming the store and its file", async () => {
    const lines: string[] = [];
    const broker = new ServiceBroker({
      logger: {
        type: "Console",
        options: { level: "warn", formatter: (_t: string, args: unknown[]) => args },
      },
      metrics: { enabled: true },
    });
    const errors = jest.spyOn(console, "error").mockImplementation((...a) => void lines.push(a.join(" ")));
    const warns = jest.spyOn(console, "warn").mockImplementation((...a) => void lines.push(a.join(" ")));
    try {
      const health = new WriteHealth("rounds", "/data/db/rounds.db", storeWatch(broker));
      for (let i = 0; i < 3; i++) health.failed("ENOSPC", "full", writeError("ENOSPC"));
      health.succeeded();
      const metric = broker.metrics.getMetric(STORE_WRITE_ERRORS);
      expect(metric?.get({ store: "rounds", code: "ENOSPC" })?.value).toBe(3);
      expect(storeWatch(broker)).toBe(storeWatch(broker));
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(
        /^Store writes fail: rounds \(\/data\/db\/rounds\.db\): ENOSPC: no space left on device/,
      );
      expect(lines[1]).toMatch(
        /^Store writes succeed again: rounds \(\/data\/db\/rounds\.db\), after 3 failed/,
      );
    } finally {
      errors.mockRestore();
      warns.mockRestore();
      await broker.stop();
    }
  });
});
