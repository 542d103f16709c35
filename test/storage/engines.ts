/**
 * The engines the storage contract suite runs on: NeDB in memory, NeDB on disk (a fresh temporary folder
 * per test file) and MongoDB when MONGO_URI is set (a fresh database per test file, dropped afterwards;
 * see test/support/mongo.ts, also for REQUIRE_MONGO).
 * `describeEachEngine` runs one set of cases on every reachable engine; an unreachable one is reported as
 * skipped, so a run without MongoDB says so instead of passing silently.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { NedbStore, type Collection, type Store } from "../../shared/storage";
import { MongoStore } from "../../shared/storage/mongo";
import { dropDatabase, mongoForTests, withDatabase } from "../support/mongo";

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

// Throws when REQUIRE_MONGO is set without MONGO_URI: then every file of the suite fails, none skips.
const mongo = mongoForTests();

const mongodb: EngineFactory = {
  name: "mongodb",
  skipReason: mongo.skipReason,
  async open() {
    if (!mongo.uri) throw new Error("MONGO_URI is not set");
    const uri = withDatabase(mongo.uri, `storage_contract_${process.pid}_${randomBytes(4).toString("hex")}`);
    const store = await MongoStore.connect(uri);
    return {
      store,
      async dispose() {
        try {
          await dropDatabase(uri);
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
