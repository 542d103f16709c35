/**
 * The blob-store contract: what the stores service relies on from its picture engine, the same on the
 * filesystem (the embedded default) and on GridFS (with MONGO_URI). GridFS runs twice: on a real MongoDB
 * whenever MONGO_URI is set (skipped otherwise, failing instead with REQUIRE_MONGO: test/support/mongo.ts),
 * and always on an in-memory bucket that behaves as the driver's does (test/support/fake-gridfs.ts), so
 * the engine's own logic (ledger, renames, sweeps, half-written uploads) is exercised on every machine.
 * Each engine also opens a second store on the same storage: another stores process, or the same one
 * after a restart.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { LocalBlobStore, type BlobStore } from "../../services/stores/blob-store";
import type { EventInput } from "../../services/stores/event-form";
import { EventKeysRepository, eventKeyId } from "../../services/stores/event-keys.repository";
import {
  BUCKET,
  GridFsBlobStore,
  STAGING_COLLECTION,
  type GridFsBucketLike,
  type StagingEntry,
} from "../../services/stores/gridfs-blob-store";
import { mediaSweepTasks } from "../../services/stores/media-sweep";
import { createOrReplayStoreEvent } from "../../services/stores/store-events";
import { StoresRepository } from "../../services/stores/stores.repository";
import { PayloadTooLargeError, UploadInterruptedError } from "../../shared/errors";
import { NedbStore, type Store } from "../../shared/storage";
import { MongoStore } from "../../shared/storage/mongo";
import { FakeGridFsBucket } from "../support/fake-gridfs";
import { dropDatabase, mongoForTests, withDatabase } from "../support/mongo";
import { chunksOf, picture } from "../unit/support/pictures";

const HOUR = 3_600_000;
const LATER = () => Date.now() + 2 * HOUR;

interface BlobEngine {
  /** The store under test. */
  blobs: BlobStore;
  /** Another store on the same storage: a second stores process, or this one restarted. */
  another(): BlobStore;
  /** Staged uploads still kept (staging files, or ledger entries and their GridFS files). */
  staged(): Promise<number>;
  /** GridFS chunks no files document owns (what a half-written upload leaves); 0 on the filesystem. */
  chunksWithoutFile(): Promise<number>;
  /** The document store beside it (the event and key repositories of the replay case). */
  store: Store;
  dispose(): Promise<void>;
}

interface BlobEngineFactory {
  name: string;
  skipReason?: string;
  open(): Promise<BlobEngine>;
}

const filesystem: BlobEngineFactory = {
  name: "filesystem",
  async open() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "blob-contract-"));
    const store = new NedbStore(null);
    return {
      blobs: new LocalBlobStore(dir),
      another: () => new LocalBlobStore(dir),
      staged: async () => fs.readdirSync(path.join(dir, ".staging")).length,
      chunksWithoutFile: async () => 0,
      store,
      async dispose() {
        await store.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

/** Where one GridFS store keeps its bytes and its ledger (a process's own connection, with MongoDB). */
interface GridFsSide {
  bucket: GridFsBucketLike;
  store: Store;
}

async function gridFsEngine(
  main: GridFsSide,
  other: GridFsSide,
  files: () => Promise<{ ids: Set<string>; staging: string[] }>,
  chunkOwners: () => Promise<string[]>,
  dispose: () => Promise<void>,
): Promise<BlobEngine> {
  const open = (side: GridFsSide) =>
    new GridFsBlobStore(side.bucket, side.store.collection<StagingEntry>(STAGING_COLLECTION));
  const blobs = open(main);
  await blobs.init();
  const ledger = main.store.collection<StagingEntry>(STAGING_COLLECTION);
  return {
    blobs,
    another: () => open(other),
    // Each staged upload once, whether its ledger entry, its files document or both are left.
    async staged() {
      const ids = new Set((await ledger.find({})).map((e) => e._id));
      for (const name of (await files()).staging) ids.add(name.slice(".staging/".length));
      return ids.size;
    },
    async chunksWithoutFile() {
      const { ids } = await files();
      return (await chunkOwners()).filter((id) => !ids.has(id)).length;
    },
    store: main.store,
    dispose,
  };
}

const gridFsInMemory: BlobEngineFactory = {
  name: "gridfs (in-memory bucket)",
  async open() {
    const store = new NedbStore(null);
    const bucket = new FakeGridFsBucket(1024);
    const side = { bucket, store };
    return gridFsEngine(
      side,
      side,
      async () => ({
        ids: new Set(bucket.files.keys()),
        staging: [...bucket.files.values()].map((f) => f.filename).filter((n) => n.startsWith(".staging/")),
      }),
      async () => bucket.chunks.map((c) => c.filesId),
      () => store.close(),
    );
  },
};

const mongo = mongoForTests();

const gridFsMongo: BlobEngineFactory = {
  name: "gridfs (mongodb)",
  skipReason: mongo.skipReason,
  async open() {
    if (!mongo.uri) throw new Error("MONGO_URI is not set");
    const uri = withDatabase(mongo.uri, `blob_contract_${process.pid}_${randomBytes(4).toString("hex")}`);
    const store = await MongoStore.connect(uri);
    // Another stores process has a connection of its own.
    const second = await MongoStore.connect(uri);
    type FileDoc = { _id: string; filename: string };
    type ChunkDoc = { _id: string; files_id: { toString(): string } };
    const filesColl = store.collection<FileDoc>(`${BUCKET}.files`);
    const chunksColl = store.collection<ChunkDoc>(`${BUCKET}.chunks`);
    return gridFsEngine(
      { bucket: store.gridFsBucket(BUCKET), store },
      { bucket: second.gridFsBucket(BUCKET), store: second },
      async () => {
        const all = await filesColl.find({});
        return {
          ids: new Set(all.map((f) => String(f._id))),
          staging: all.map((f) => f.filename).filter((n) => n.startsWith(".staging/")),
        };
      },
      async () => (await chunksColl.find({})).map((c) => String(c.files_id)),
      async () => {
        try {
          await dropDatabase(uri);
        } finally {
          await second.close();
          await store.close();
        }
      },
    );
  },
};

const engines = [filesystem, gridFsInMemory, gridFsMongo];
const reachable = engines.filter((e) => !e.skipReason);
const unreachable = engines.filter((e) => e.skipReason);

const onlineForm = (): EventInput => ({
  name: "Jazz night",
  price: 1500,
  event_type: "online",
  is_active: true,
  discount_percent: 0,
  duration: 90,
  participants_limit: 40,
  short_desc: null,
  detail_desc: null,
  start_time: new Date(LATER() + HOUR),
  city: null,
  address: null,
  postal_code: null,
  country: null,
  latitude: null,
  longitude: null,
  meeting_link: null,
  meeting_password: null,
  meeting_platform: null,
});

const streamOf = (buf: Buffer, chunk = 4096): Readable => Readable.from(chunksOf(buf, chunk));

async function readAll(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

function contract(engine: () => BlobEngine): void {
  const blobs = () => engine().blobs;
  const place = async (bytes: Buffer, mime: "image/png" | "image/jpeg" = "image/png") =>
    blobs().commit((await blobs().stage(streamOf(bytes), 1_000_000)).stagedId, mime);

  afterEach(async () => {
    // Every case leaves nothing staged behind: staged uploads are committed or discarded.
    await expect(engine().staged()).resolves.toBe(0);
    await expect(engine().chunksWithoutFile()).resolves.toBe(0);
  });

  it("when a picture larger than one GridFS chunk is committed, then another store on the same storage serves it byte-identical", async () => {
    const bytes = picture("jpeg", 600_000);
    const name = await place(bytes, "image/jpeg");
    expect(name).toMatch(/^[0-9a-f-]{36}\.jpg$/);
    const blob = await engine().another().open(name);
    expect(blob).toMatchObject({ size: bytes.length, mime: "image/jpeg" });
    expect((await readAll(blob!.stream)).equals(bytes)).toBe(true);
    await blobs().remove(name);
  });

  it("when chunks arrive one byte at a time at first, then the type is sniffed and the SHA-256 is of exactly the bytes", async () => {
    const bytes = picture("webp", 5000);
    const id = await blobs().begin({ sha256: true });
    for (const part of [...chunksOf(bytes.subarray(0, 20), 1), bytes.subarray(20)])
      await blobs().append(id, part, 10_000);
    const staged = await blobs().finish(id);
    expect(staged).toEqual({
      stagedId: id,
      size: bytes.length,
      mime: "image/webp",
      sha256: createHash("sha256").update(bytes).digest("hex"),
    });
    await blobs().discard(id);
  });

  it("when the bytes are no picture, then they are staged with mime null (the form answers 422)", async () => {
    const staged = await blobs().stage(streamOf(Buffer.from("not a picture at all")), 1000);
    expect(staged).toMatchObject({ size: 20, mime: null });
    await blobs().discard(staged.stagedId);
  });

  it("when an upload passes maxBytes, then 413 (PayloadTooLargeError), nothing of it is kept, and later chunks are refused", async () => {
    const id = await blobs().begin();
    await blobs().append(id, picture("png", 3000), 4096);
    const err = await blobs()
      .append(id, Buffer.alloc(1097), 4096)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect((err as PayloadTooLargeError).code).toBe(413);
    await expect(blobs().append(id, Buffer.alloc(1), 4096)).rejects.toBeInstanceOf(UploadInterruptedError);
  });

  it("when a source never ends, then staging stops at maxBytes and keeps nothing", async () => {
    let pulled = 0;
    const endless = new Readable({
      highWaterMark: 16 * 1024,
      read() {
        pulled += 1;
        this.push(pulled === 1 ? picture("png", 1024) : Buffer.alloc(1024));
      },
    });
    await expect(blobs().stage(endless, 10 * 1024)).rejects.toBeInstanceOf(PayloadTooLargeError);
    expect(pulled).toBeLessThan(40);
  });

  it("when an upload staged on one store is committed by another (createEvent reached another process), then the picture is in place", async () => {
    const bytes = picture("png", 3000);
    const staged = await blobs().stage(streamOf(bytes), 10_000);
    const name = await engine().another().commit(staged.stagedId, "image/png");
    expect((await readAll((await blobs().open(name))!.stream)).equals(bytes)).toBe(true);
    await blobs().remove(name);
  });

  it("when an open or a finished upload is discarded, then it is gone and cannot be committed", async () => {
    const open = await blobs().begin();
    await blobs().append(open, picture("png", 2000), 10_000);
    await blobs().discard(open);
    const finished = (await blobs().stage(streamOf(picture("png", 2000)), 10_000)).stagedId;
    await engine().another().discard(finished);
    await expect(blobs().commit(finished, "image/png")).rejects.toThrow();
    await expect(blobs().discard(randomUUID())).resolves.toBeUndefined();
  });

  it("when a committed picture is removed, then it is no longer served", async () => {
    const name = await place(picture("png", 500));
    await blobs().remove(name);
    await expect(blobs().open(name)).resolves.toBeNull();
  });

  it("when a name is unknown, a staged upload's or a path, then open serves nothing and remove deletes nothing", async () => {
    const kept = await place(picture("png", 500));
    const staged = (await blobs().stage(streamOf(picture("png", 500)), 10_000)).stagedId;
    for (const name of [
      `${randomUUID()}.png`,
      `.staging/${staged}`,
      `.staging/${staged}.png`,
      `../${kept}`,
    ]) {
      await expect(blobs().open(name)).resolves.toBeNull();
      await blobs().remove(name);
    }
    await expect(blobs().commit("../x", "image/png")).rejects.toThrow("Bad staged id");
    expect(await blobs().open(kept)).not.toBeNull();
    await blobs().discard(staged);
    await blobs().remove(kept);
  });

  it("when a process died mid-upload or before committing, then a sweep past the retention removes its bytes; fresh and open uploads stay", async () => {
    const dead = engine().another();
    const halfway = await dead.begin();
    await dead.append(halfway, picture("png", 5000), 100_000); // a few GridFS chunks, no files document
    const uncommitted = (await dead.stage(streamOf(picture("png", 3000)), 100_000)).stagedId;
    const open = await blobs().begin();
    await blobs().append(open, picture("png", 100), 1000);
    const fresh = (await blobs().stage(streamOf(picture("png", 100)), 1000)).stagedId;

    await expect(blobs().sweepStaged(HOUR)).resolves.toBe(0); // nothing is past the retention yet
    await expect(engine().staged()).resolves.toBe(4);
    // Two hours on: the dead process's two and `fresh` (finished, never committed) are stale now.
    await expect(blobs().sweepStaged(HOUR, LATER())).resolves.toBe(3);
    await expect(blobs().commit(uncommitted, "image/png")).rejects.toThrow();
    await expect(blobs().commit(fresh, "image/png")).rejects.toThrow();
    await expect(engine().staged()).resolves.toBe(1); // the upload still open here
    await blobs().discard(open);
  });

  it("when pictures in place are past the retention, then the sweep removes those no item shows; shown ones stay, young ones are not asked about", async () => {
    const shown = await place(picture("png", 200));
    const orphan = await place(picture("png", 200));
    const asked: string[] = [];
    await expect(blobs().sweepOrphans(HOUR, async () => false)).resolves.toEqual([]);
    const removed = await blobs().sweepOrphans(
      HOUR,
      async (name) => {
        asked.push(name);
        return name === shown;
      },
      LATER(),
    );
    expect(removed).toEqual([orphan]);
    expect(asked.sort()).toEqual([shown, orphan].sort());
    expect(await blobs().open(shown)).not.toBeNull();
    await expect(blobs().open(orphan)).resolves.toBeNull();
    await blobs().remove(shown);
  });

  it("when the stores service's sweep tasks run, then a stale staged upload and an orphan go, a shown picture stays", async () => {
    const repo = new StoresRepository(engine().store);
    await repo.init();
    const shop = await repo.createStore(
      { name: "Sweep", is_blogger: false, manager_ids: ["m"] },
      "RUB",
      new Date(),
    );
    const shown = await place(picture("png", 100));
    const orphan = await place(picture("png", 100));
    await repo.createEventItem(
      {
        store: shop,
        form: onlineForm(),
        question: { id: 1, theme: "t", emoji: "e", category: "c" },
        pictureName: shown,
        createdBy: "m",
      },
      new Date(),
    );
    await engine()
      .another()
      .stage(streamOf(picture("png", 100)), 1000); // never committed
    const lost: string[] = [];
    const tasks = mediaSweepTasks(blobs(), repo, HOUR, (n) => lost.push(n));
    const at = new Date(LATER());
    const removed = Object.fromEntries(await Promise.all(tasks.map(async (t) => [t.name, await t.run(at)])));
    expect(removed).toEqual({ "staged uploads": 1, "pictures no item shows": 1 });
    expect(lost).toEqual([orphan]);
    expect(await blobs().open(shown)).not.toBeNull();
    await blobs().remove(shown);
  });

  it("when a store event is sent twice with one Idempotency-Key, then the retry is a replay: one picture in place, the retry's upload discarded", async () => {
    const db = engine().store;
    const repo = new StoresRepository(db);
    await repo.init();
    const keys = new EventKeysRepository(db);
    await keys.init();
    const shop = await repo.createStore(
      { name: "Replay", is_blogger: false, manager_ids: ["m"] },
      "RUB",
      new Date(),
    );
    const bytes = picture("png", 2000);
    const key = `key-${randomUUID()}`;
    const start = new Date(LATER() + 24 * HOUR).toISOString();
    const fields = {
      name: "Jazz night",
      price: "1500",
      event_type: "online",
      duration: "90",
      participants_limit: "40",
      start_time: start,
    };
    const send = async (via: BlobStore) => {
      const staged = await via.stage(streamOf(bytes), 10_000);
      const lease = randomUUID();
      const now = new Date();
      await keys.claim(eventKeyId("m", key), lease, now, 130_000, 24 * HOUR);
      const deps = {
        repo,
        blobs: via,
        pickQuestion: async () => ({ id: 1, theme: "t", emoji: "e", category: "c" }),
        announce: async () => undefined,
        eventIdOfKey: (userId: string, k: string) => keys.eventIdOf(eventKeyId(userId, k), new Date()),
        publicUrl: "",
        now: () => new Date(),
      };
      try {
        return await createOrReplayStoreEvent(deps, {
          storeId: String(shop._id),
          userId: "m",
          fields,
          picture: {
            staged_id: staged.stagedId,
            size: staged.size,
            mime: staged.mime,
            sha256: createHash("sha256").update(bytes).digest("hex"),
          },
          idempotencyKey: key,
        });
      } finally {
        await keys.release(eventKeyId("m", key), lease, new Date());
      }
    };
    const first = await send(blobs());
    const retry = await send(engine().another());
    expect(first.replayed).toBe(false);
    expect(retry.replayed).toBe(true);
    expect(retry.event).toEqual(first.event);
    const name = first.event.cover_picture_url.split("/").pop() as string;
    expect((await readAll((await blobs().open(name))!.stream)).equals(bytes)).toBe(true);
    await blobs().remove(name);
  });
}

describe.each(reachable)("Blob store contract on $name", (factory) => {
  let engine: BlobEngine | undefined;
  beforeAll(async () => {
    engine = await factory.open();
  }, 30_000);
  afterAll(async () => {
    await engine?.dispose();
  }, 30_000);
  contract(() => {
    if (!engine) throw new Error(`${factory.name} is not open`);
    return engine;
  });
});

if (unreachable.length > 0) {
  describe.skip.each(unreachable)("Blob store contract on $name ($skipReason)", (factory) => {
    contract(() => {
      throw new Error(`${factory.name} is not reachable`);
    });
  });
}
