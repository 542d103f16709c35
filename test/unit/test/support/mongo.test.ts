/**
 * The gate of the MongoDB-only tests (test/support/mongo.ts): without MONGO_URI they skip with a
 * reason, unless REQUIRE_MONGO says they must run (CI's MongoDB job), which turns the skip into a failure.
 */
import { mongoForTests, REQUIRE_MONGO, uniqueDatabaseName } from "../../../support/mongo";

describe("mongoForTests", () => {
  it("when MONGO_URI is set, then the tests get it", () => {
    expect(mongoForTests({ MONGO_URI: "mongodb://127.0.0.1:27017/rounds" })).toEqual({
      uri: "mongodb://127.0.0.1:27017/rounds",
    });
    expect(mongoForTests({ MONGO_URI: "mongodb://db/rounds", [REQUIRE_MONGO]: "true" })).toEqual({
      uri: "mongodb://db/rounds",
    });
  });

  it.each([
    [{}],
    [{ MONGO_URI: "" }],
    [{ MONGO_URI: "  ", [REQUIRE_MONGO]: "false" }],
    [{ [REQUIRE_MONGO]: "0" }],
  ])("when MONGO_URI is unset and MongoDB is not required (%j), then the tests skip and say why", (env) => {
    expect(mongoForTests(env)).toEqual({ skipReason: "MONGO_URI is not set" });
  });

  it.each(["true", "1", "TRUE"])(
    "when REQUIRE_MONGO is %s and MONGO_URI is unset, then it throws instead of skipping",
    (flag) => {
      expect(() => mongoForTests({ [REQUIRE_MONGO]: flag })).toThrow(
        /REQUIRE_MONGO is set but MONGO_URI is not/,
      );
    },
  );

  it("when REQUIRE_MONGO is neither yes nor no, then it throws rather than guess", () => {
    expect(() => mongoForTests({ [REQUIRE_MONGO]: "yes please" })).toThrow(/must be true or false/);
  });

  it("when MONGO_URI is no MongoDB connection string, then it throws before any test runs", () => {
    expect(() => mongoForTests({ MONGO_URI: "postgres://localhost/app" })).toThrow(
      /not a MongoDB connection string/,
    );
  });
});

describe("uniqueDatabaseName", () => {
  it("when called twice, then the names differ and fit MongoDB's 63 characters", () => {
    const a = uniqueDatabaseName("cluster");
    const b = uniqueDatabaseName("cluster");
    expect(a).not.toBe(b);
    expect(a).toMatch(/^cluster_[a-z0-9_]+$/);
    expect(uniqueDatabaseName("x".repeat(80)).length).toBeLessThanOrEqual(63);
  });
});
