/**
 * The MongoDB the tests may use. No MongoDB server can run on the machines this project is usually
 * tested on, so everything that needs one (the MongoDB engine of the storage suite, clusters storing in
 * MongoDB, the cases of two processes of one service sharing a store) skips with a message when
 * MONGO_URI is unset. CI's MongoDB job sets REQUIRE_MONGO=true: there a missing MONGO_URI fails the run
 * instead, so those tests can never pass by being skipped. Tests only ever use databases of their own
 * (`withDatabase`), dropped afterwards: the database MONGO_URI names is never touched.
 */
import mongoose from "mongoose";

/** The variable that turns "MONGO_URI is unset, skipping" into a failure. Test-only, not app config. */
export const REQUIRE_MONGO = "REQUIRE_MONGO";

export type MongoForTests = { uri: string; skipReason?: undefined } | { uri?: undefined; skipReason: string };

/** `uri` with its database replaced by `dbName`; credentials keep authenticating where they did before. */
export function withDatabase(uri: string, dbName: string): string {
  const match = /^(mongodb(?:\+srv)?:\/\/)([^/?]+)(?:\/([^?]*))?(?:\?(.*))?$/.exec(uri);
  if (!match) throw new Error(`MONGO_URI is not a MongoDB connection string: ${uri}`);
  const [, scheme, hosts, db, query] = match;
  // The database of the URI is also the default authSource; keep it when the URI carries credentials.
  const needsAuthSource = hosts.includes("@") && !/(^|&)authSource=/i.test(query ?? "");
  const params = [query, needsAuthSource ? `authSource=${db || "admin"}` : ""].filter(Boolean).join("&");
  return `${scheme}${hosts}/${dbName}${params ? `?${params}` : ""}`;
}

/** REQUIRE_MONGO as a flag; anything but an unambiguous yes or no is a mistake worth stopping for. */
function required(env: NodeJS.ProcessEnv): boolean {
  const value = (env[REQUIRE_MONGO] ?? "").trim().toLowerCase();
  if (value === "" || value === "0" || value === "false") return false;
  if (value === "1" || value === "true") return true;
  throw new Error(`${REQUIRE_MONGO} must be true or false (or 1 or 0), not "${env[REQUIRE_MONGO]}"`);
}

/**
 * The MongoDB to test against, or why there is none. Throws when REQUIRE_MONGO is set and MONGO_URI is
 * not (or is no MongoDB connection string): called at the top of a test file, that fails the file.
 */
export function mongoForTests(env: NodeJS.ProcessEnv = process.env): MongoForTests {
  const isRequired = required(env);
  const uri = (env.MONGO_URI ?? "").trim();
  if (uri) {
    withDatabase(uri, "probe"); // refuses what is no MongoDB connection string, before any test runs
    return { uri };
  }
  if (isRequired) {
    throw new Error(
      `${REQUIRE_MONGO} is set but MONGO_URI is not: the MongoDB tests must run here, not be skipped ` +
        "(e.g. MONGO_URI=mongodb://127.0.0.1:27017/rounds)",
    );
  }
  return { skipReason: "MONGO_URI is not set" };
}

/** A database name no other test file, run or cluster uses (MongoDB allows 63 characters). */
export function uniqueDatabaseName(prefix: string): string {
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`.slice(
    0,
    63,
  );
}

/** Drops the database `uri` names (a test's own, see `withDatabase`). */
export async function dropDatabase(uri: string): Promise<void> {
  const conn = await mongoose.createConnection(uri, { serverSelectionTimeoutMS: 10_000 }).asPromise();
  try {
    await conn.dropDatabase();
  } finally {
    await conn.close();
  }
}
