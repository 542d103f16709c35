/**
 * The MongoDB engine factory gives each test file its own database by rewriting MONGO_URI; MongoDB itself
 * is not reachable everywhere, so the rewriting is checked on its own.
 */
import { withDatabase } from "../support/mongo";

describe("withDatabase (the MongoDB factory's per-run database)", () => {
  it("when MONGO_URI names no database, then the run's database is appended", () => {
    expect(withDatabase("mongodb://localhost:27017", "run1")).toBe("mongodb://localhost:27017/run1");
    expect(withDatabase("mongodb://localhost:27017/", "run1")).toBe("mongodb://localhost:27017/run1");
  });

  it("when MONGO_URI names a database and options, then only the database is replaced", () => {
    expect(withDatabase("mongodb://h1:27017,h2:27017/app?replicaSet=rs0", "run1")).toBe(
      "mongodb://h1:27017,h2:27017/run1?replicaSet=rs0",
    );
    expect(withDatabase("mongodb+srv://cluster.example.net/app", "run1")).toBe(
      "mongodb+srv://cluster.example.net/run1",
    );
  });

  it("when MONGO_URI carries credentials, then they still authenticate against the original database", () => {
    expect(withDatabase("mongodb://u:p@localhost/app", "run1")).toBe(
      "mongodb://u:p@localhost/run1?authSource=app",
    );
    expect(withDatabase("mongodb://u:p@localhost", "run1")).toBe(
      "mongodb://u:p@localhost/run1?authSource=admin",
    );
    expect(withDatabase("mongodb://u:p@localhost/app?authSource=other&tls=true", "run1")).toBe(
      "mongodb://u:p@localhost/run1?authSource=other&tls=true",
    );
  });

  it("when MONGO_URI is not a MongoDB connection string, then it is refused", () => {
    expect(() => withDatabase("postgres://localhost/app", "run1")).toThrow(/not a MongoDB connection string/);
  });
});
