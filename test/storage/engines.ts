/**
 * The engines the storage contract suite runs on: NeDB in memory, NeDB on disk (a fresh temporary folder
 * per test file) and MongoDB when MONGO_URI is set (a fresh database per test file, dropped afterwards).
 * `describeEachEngine` runs one set of cases on every reachable engine; an unreachable one is reported as
 * skipped, so a run without MongoDB says so instead of passing silently.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import mongoose from "mongoose";
import { MongoStore, NedbStore, type Collection, type Store } from "../../shared/storage";

export interface EngineHandle {
  store: Store;
  /** Closes the store and removes what the engine created for the test file (folder, database). */
  dispose(): Promise<void>;
}

export interface EngineFactory {
  name: string;
  /** Why the engine cannot be reached here; absent when it can. */
  skipReason?: string;
  open(): Promise<EngineHandle>;
}

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

const nedbMemory: EngineFactory = {
  name: "nedb-memory",
  async open() {
    const store = new NedbStore(null);
    return { store, dispose: () => store.close() };
  },
};

const nedbDisk: EngineFactory = {
  name: "nedb-disk",
  async open() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "storage-contract-"));
    const store = new NedbStore(dir);
    return {
      store,
      async dispose() {
        try {
          await store.close();
        } finally {
          fs.rmSync(dir, { recursive: true, force: true });
        }
      },
    };
  },
};

const mongoUri = process.env.MONGO_URI;

const mongodb: EngineFactory = {
  name: "mongodb",
  skipReason: mongoUri ? undefined : "MONGO_URI is not set",
  async open() {
    if (!mongoUri) throw new Error("MONGO_URI is not set");
    const uri = withDatabase(mongoUri, `storage_contract_${process.pid}_${randomBytes(4).toString("hex")}`);
    const store = await MongoStore.connect(uri);
    return {
      store,
      async dispose() {
        try {
          const conn = await mongoose.createConnection(uri, { serverSelectionTimeoutMS: 10_000 }).asPromise();
          try {
            await conn.dropDatabase();
          } finally {
            await conn.close();
          }
        } finally {
          await store.close();
        }
      },
    };
  },
};

export const engines: EngineFactory[] = [nedbMemory, nedbDisk, mongodb];

const reachable = engines.filter((e) => !e.skipReason);
const unreachable = engines.filter((e) => e.skipReason);

/**
 * Declares `cases` once per engine (`describe.each`). The engine's store is open for the whole describe
 * block and closed in afterAll; `store()` hands it to the cases.
 */
export function describeEachEngine(
  title: string,
  cases: (store: () => Store, engine: EngineFactory) => void,
): void {
  describe.each(reachable)(`${title} on $name`, (engine) => {
    let handle: EngineHandle | undefined;
    beforeAll(async () => {
      handle = await engine.open();
    }, 30_000);
    afterAll(async () => {
      await handle?.dispose();
      handle = undefined;
    }, 30_000);
    cases(() => {
      if (!handle) throw new Error(`The ${engine.name} store is not open`);
      return handle.store;
    }, engine);
  });
  if (unreachable.length > 0) {
    describe.skip.each(unreachable)(`${title} on $name ($skipReason)`, (engine) => {
      cases(() => {
        throw new Error(`${engine.name} is not reachable`);
      }, engine);
    });
  }
}

let collections = 0;

/** A collection no other case uses, so cases never see each other's documents. */
export function freshCollection<T extends { _id: string | number }>(
  store: Store,
  prefix = "contract",
): Collection<T> {
  collections += 1;
  return store.collection<T>(`${prefix}_${collections}_${randomBytes(3).toString("hex")}`);
}

/** A unique id that is also a valid map key (no "." or "$"), as shared/contracts/common Id requires. */
export const uid = (prefix: string): string => `${prefix}-${randomBytes(6).toString("hex")}`;
