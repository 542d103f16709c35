/**
 * A store event with an Idempotency-Key, without a broker (docs/decisions/0023): the stores and key
 * repositories on in-memory NeDB, blob storage a fake that records what is staged and committed, and a
 * clock the tests move. A retry of the same request gets the first event back and keeps nothing of its
 * own; another request with the key is refused 422; a request that created nothing leaves the key free
 * for one that does; an expired key makes a new event.
 */
import { createHash, randomUUID } from "node:crypto";
import { EventKeysRepository, eventKeyId } from "../../../../services/stores/event-keys.repository";
import {
  createOrReplayStoreEvent,
  type CreateEventInput,
  type StoreEventsDeps,
} from "../../../../services/stores/store-events";
import { StoresRepository, type StoreDoc } from "../../../../services/stores/stores.repository";
import type { QuestionInfo } from "../../../../shared/contracts/rounds";
import { IdempotencyKeyBusyError, RequestValidationError } from "../../../../shared/errors";
import type { PendingEntry } from "../../../../shared/outbox";
import { NedbStore } from "../../../../shared/storage";
import { FakeBlobs } from "../../support/fake-blobs";

const T0 = new Date("2030-01-01T12:00:00.000Z");
const TTL_MS = 24 * 3600_000;
const LEASE_MS = 130_000;
const MANAGER = "manager-1";
const QUESTION: QuestionInfo = { id: 4, theme: "Jazz legends", emoji: "🎷", category: "Music" };

let db: NedbStore;
let repo: StoresRepository;
let keys: EventKeysRepository;
let blobs: FakeBlobs;
let announced: PendingEntry[];
let store: StoreDoc;
let clock: Date;
let deps: StoreEventsDeps;

beforeEach(async () => {
  db = new NedbStore(null);
  repo = new StoresRepository(db);
  await repo.init();
  keys = new EventKeysRepository(db);
  await keys.init();
  store = await repo.createStore({ name: "Jazz Club", is_blogger: false, manager_ids: [MANAGER] }, "RUB", T0);
  blobs = new FakeBlobs();
  announced = [];
  clock = T0;
  deps = {
    repo,
    blobs,
    pickQuestion: async () => QUESTION,
    announce: async (p) => void announced.push(p),
    eventIdOfKey: (userId, key) => keys.eventIdOf(eventKeyId(userId, key), clock),
    publicUrl: "",
    now: () => clock,
  };
});

afterEach(() => db.close());

const fields = (overrides: Record<string, string> = {}): Record<string, string> => ({
  name: "Jazz night",
  price: "1500",
  event_type: "online",
  duration: "90",
  participants_limit: "40",
  start_time: "2030-02-01T18:30:00+03:00",
  ...overrides,
});

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

/** One request: the picture is staged for it (its bytes stood for by `bytes`). */
function request(over: Partial<CreateEventInput> & { bytes?: string } = {}): CreateEventInput {
  return {
    storeId: String(store._id),
    userId: MANAGER,
    fields: fields(),
    picture: {
      staged_id: blobs.stageOne(),
      size: 2048,
      mime: "image/png",
      sha256: sha256(over.bytes ?? "png"),
    },
    idempotencyKey: "key-1",
    ...over,
  };
}

/** What the gateway's permission check does first: take the key for this request. */
async function claim(key = "key-1", userId = MANAGER, lease = randomUUID()): Promise<string> {
  const c = await keys.claim(eventKeyId(userId, key), lease, clock, LEASE_MS, TTL_MS);
  if (!c.claimed) throw new Error("key busy");
  return lease;
}

async function send(over: Partial<CreateEventInput> & { bytes?: string } = {}) {
  const input = request(over);
  const lease = await claim(input.idempotencyKey, input.userId);
  try {
    return await createOrReplayStoreEvent(deps, input);
  } finally {
    await keys.release(eventKeyId(input.userId, input.idempotencyKey as string), lease, clock);
  }
}

const failure = async (promise: Promise<unknown>): Promise<Error> => {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error("Expected the call to fail");
};

const events = () => db.collection<{ _id: string; kind: string }>("items").count({ kind: "event" });

describe("a store event with an Idempotency-Key", () => {
  it("when the same request is sent again, then the first event comes back, marked replayed, and nothing new is kept", async () => {
    const first = await send();
    expect(first.replayed).toBe(false);
    const again = await send();
    expect(again).toEqual({ event: first.event, replayed: true });
    expect(await events()).toBe(1);
    expect(blobs.committed.size).toBe(1);
    expect(blobs.staged.size).toBe(0);
    expect(announced).toHaveLength(1);
  });

  it("when the fields come in another order, then it is still the same request", async () => {
    const first = await send();
    const reordered = Object.fromEntries(Object.entries(fields()).reverse());
    expect(await send({ fields: reordered })).toEqual({ event: first.event, replayed: true });
  });

  it.each([
    ["a text field differs", { fields: fields({ price: "1500.0" }) }],
    ["a text field is added", { fields: fields({ short_desc: "Live" }) }],
    ["the picture's bytes differ", { bytes: "another png" }],
  ])("when %s, then 422 at the key, and the retry's picture is not kept", async (_case, over) => {
    await send();
    const err = await failure(send(over));
    expect(err).toBeInstanceOf(RequestValidationError);
    expect((err as RequestValidationError).data).toEqual([
      expect.objectContaining({ type: "value_error", loc: ["idempotency_key"], input: "key-1" }),
    ]);
    expect(await events()).toBe(1);
    expect(blobs.committed.size).toBe(1);
    expect(blobs.staged.size).toBe(0);
  });

  it("when the same key is used for another store of the same manager, then 422", async () => {
    const other = await repo.createStore(
      { name: "Second", is_blogger: false, manager_ids: [MANAGER] },
      "RUB",
      T0,
    );
    await send();
    const err = await failure(send({ storeId: String(other._id) }));
    expect(err).toBeInstanceOf(RequestValidationError);
    expect(await events()).toBe(1);
  });

  it("when two managers of a store use the same key, then each gets an event of their own", async () => {
    const shared = await repo.createStore(
      { name: "Shared", is_blogger: false, manager_ids: [MANAGER, "manager-2"] },
      "RUB",
      T0,
    );
    const a = await send({ storeId: String(shared._id) });
    const b = await send({ storeId: String(shared._id), userId: "manager-2" });
    expect(b.replayed).toBe(false);
    expect(b.event.id).not.toBe(a.event.id);
  });

  it("when the first attempt was refused (422), then a corrected retry with the key creates the event", async () => {
    const refused = await failure(send({ fields: fields({ price: "-1" }) }));
    expect(refused).toBeInstanceOf(RequestValidationError);
    expect(await events()).toBe(0);
    const created = await send();
    expect(created.replayed).toBe(false);
    expect(await events()).toBe(1);
  });

  it("when the first attempt failed after its picture was moved into place, then nothing stays and a retry creates the event", async () => {
    const failing = { ...deps, pickQuestion: async () => QUESTION };
    let insertFails = true;
    failing.repo = {
      ...repo,
      findStore: (id) => repo.findStore(id),
      findItem: (id) => repo.findItem(id),
      deleteItem: (id) => repo.deleteItem(id),
      createEventItem: (...args) => {
        if (insertFails) return Promise.reject(new Error("store down"));
        return repo.createEventItem(...args);
      },
    };
    const input = request();
    await claim();
    await expect(createOrReplayStoreEvent(failing, input)).rejects.toThrow("store down");
    expect(blobs.committed.size).toBe(0);
    expect(blobs.staged.size).toBe(0);
    insertFails = false;
    const retry = await createOrReplayStoreEvent(failing, request());
    expect(retry.replayed).toBe(false);
    expect(await events()).toBe(1);
  });

  it("when a retry comes after the event's start time has passed, then it is still answered with the event", async () => {
    const first = await send({ fields: fields({ start_time: "2030-01-01T13:00:00Z" }) });
    clock = new Date("2030-01-01T14:00:00.000Z");
    expect(await send({ fields: fields({ start_time: "2030-01-01T13:00:00Z" }) })).toEqual({
      event: first.event,
      replayed: true,
    });
  });

  it("when two copies of a request race past the key (a lease that ran out), then one event is made and the other copy replays it", async () => {
    await claim();
    const [a, b] = await Promise.all([
      createOrReplayStoreEvent(deps, request()),
      createOrReplayStoreEvent(deps, request()),
    ]);
    expect([a.replayed, b.replayed].sort()).toEqual([false, true]);
    expect(a.event).toEqual(b.event);
    expect(await events()).toBe(1);
    expect(blobs.committed.size).toBe(1);
    expect(blobs.staged.size).toBe(0);
    expect(announced).toHaveLength(1);
  });

  it("when the key's record is gone (the request outlived it), then 409 and the picture is not kept", async () => {
    const err = await failure(createOrReplayStoreEvent(deps, request({ idempotencyKey: "never-claimed" })));
    expect(err).toBeInstanceOf(IdempotencyKeyBusyError);
    expect(err).toEqual(expect.objectContaining({ code: 409, data: { retryAfter: 1 } }));
    expect(blobs.staged.size).toBe(0);
    expect(await events()).toBe(0);
  });

  it("when the key is retried within its time to live, then it replays; once it expired, the same request makes a new event", async () => {
    const first = await send();
    clock = new Date(T0.getTime() + TTL_MS / 2);
    expect((await send()).replayed).toBe(true);
    clock = new Date(T0.getTime() + TTL_MS);
    const after = await send();
    expect(after.replayed).toBe(false);
    expect(after.event.id).not.toBe(first.event.id);
    expect(await events()).toBe(2);
  });

  it("when a retry takes the key in its last moments, then the key lasts until that retry's lease ends", async () => {
    const first = await send();
    clock = new Date(T0.getTime() + TTL_MS - 1);
    expect((await send()).replayed).toBe(true);
    clock = new Date(T0.getTime() + TTL_MS + LEASE_MS - 2);
    expect(await send()).toEqual({ event: first.event, replayed: true });
  });

  it("when no key is sent, then identical requests make two events", async () => {
    const a = await createOrReplayStoreEvent(deps, request({ idempotencyKey: undefined }));
    const b = await createOrReplayStoreEvent(deps, request({ idempotencyKey: undefined }));
    expect(b.event.id).not.toBe(a.event.id);
    expect(await events()).toBe(2);
  });
});
