/**
 * createStoreEvent without a broker: the stores repository runs on in-memory NeDB, blob storage, the
 * question pick and the event emission are fakes that record what happened. Every failure must leave no
 * picture and no item behind.
 */
import { createStoreEvent, mediaUrl, type StoreEventsDeps } from "../../../../services/stores/store-events";
import type { PendingEntry } from "../../../../shared/outbox";
import { StoresRepository, type StoreDoc } from "../../../../services/stores/stores.repository";
import { eventRoundId, type QuestionInfo } from "../../../../shared/contracts/rounds";
import { StoreEvent, StoreEventCreatedEvent } from "../../../../shared/contracts/stores";
import {
  ForbiddenError,
  NotFoundError,
  RequestValidationError,
  type ValidationIssue,
} from "../../../../shared/errors";
import { NedbStore } from "../../../../shared/storage";
import { FakeBlobs } from "../../support/fake-blobs";
import { check } from "../../../../shared/validation";
import { jazzClubPlace } from "../../support/fixtures";

const NOW = new Date("2030-01-01T12:00:00.000Z");
const MANAGER = "manager-1";
const OUTSIDER = "outsider-1";
const QUESTION: QuestionInfo = { id: 4, theme: "Jazz legends", emoji: "🎷", category: "Music" };

interface World {
  db: NedbStore;
  repo: StoresRepository;
  blobs: FakeBlobs;
  emitted: StoreEventCreatedEvent[];
  deps: StoreEventsDeps & {
    pickQuestion: jest.Mock<Promise<QuestionInfo>, []>;
    announce: jest.Mock<Promise<void>, [PendingEntry]>;
  };
  store: StoreDoc;
  blogger: StoreDoc;
}

let w: World;

beforeEach(async () => {
  const db = new NedbStore(null);
  const repo = new StoresRepository(db);
  await repo.init();
  const store = await repo.createStore(
    {
      name: "Jazz Club",
      is_blogger: false,
      logo_url: "https://cdn.example.com/logo.png",
      manager_ids: [MANAGER],
    },
    "RUB",
    NOW,
  );
  const blogger = await repo.createStore(
    { name: "Anna's blog", is_blogger: true, logo_url: null, currency: "USD", manager_ids: [MANAGER] },
    "RUB",
    NOW,
  );
  const blobs = new FakeBlobs();
  const emitted: StoreEventCreatedEvent[] = [];
  const deps = {
    repo,
    blobs,
    pickQuestion: jest.fn(async () => QUESTION),
    announce: jest.fn(async (p: PendingEntry) => {
      emitted.push(p.entry.payload as StoreEventCreatedEvent);
    }),
    publicUrl: "",
    now: () => NOW,
  };
  w = { db, repo, blobs, emitted, deps, store, blogger };
});

afterEach(async () => {
  await w.db.close();
});

const offlineFields = (overrides: Record<string, string> = {}): Record<string, string> => ({
  name: "Jazz night",
  price: "1500.5",
  event_type: "offline",
  is_active: "true",
  discount_percent: "12.5",
  duration: "90",
  participants_limit: "40",
  short_desc: "Live jazz",
  detail_desc: "Three sets of live jazz",
  start_time: "2030-02-01T18:30:00+03:00",
  city: "Moscow",
  address: "Tverskaya 1",
  postal_code: "125009",
  country: "Russia",
  latitude: "55.7558",
  longitude: "37.6173",
  meeting_password: "pw",
  meeting_platform: "Zoom",
  meeting_link: "https://meet.example.com/jazz",
  ...overrides,
});

const onlineFields = (overrides: Record<string, string> = {}): Record<string, string> => ({
  name: "Webinar",
  price: "0",
  event_type: "online",
  duration: "60",
  participants_limit: "100",
  start_time: "2030-03-01T10:00:00Z",
  ...overrides,
});

const stagedPng = () => ({ staged_id: w.blobs.stageOne(), size: 2048, mime: "image/png" as string | null });

const run = (
  over: Partial<{
    storeId: string;
    userId: string;
    fields: Record<string, string>;
    picture: { staged_id: string; size: number; mime: string | null } | null;
  }> = {},
) =>
  createStoreEvent(w.deps, {
    storeId: over.storeId ?? String(w.store._id),
    userId: over.userId ?? MANAGER,
    fields: over.fields ?? offlineFields(),
    // Staged only when the test brings none, so the fake holds exactly what the request staged.
    picture: "picture" in over ? (over.picture ?? null) : stagedPng(),
  });

const failure = async (promise: Promise<unknown>): Promise<Error> => {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error("Expected the call to fail");
};

const validationIssues = (err: Error): ValidationIssue[] => {
  expect(err).toBeInstanceOf(RequestValidationError);
  return (err as RequestValidationError).data as ValidationIssue[];
};

/** Nothing of the request is left: no staged or committed picture, no event item, no event. */
const expectNothingLeft = async () => {
  expect([...w.blobs.staged]).toEqual([]);
  expect([...w.blobs.committed]).toEqual([]);
  expect(w.emitted).toEqual([]);
  await expect(w.db.collection<{ _id: string }>("items").count({})).resolves.toBe(0);
};

describe("createStoreEvent, success", () => {
  it("when the manager sends a valid offline form and a PNG, then the §2.12 view comes back", async () => {
    const view = await run();
    expect(check(StoreEvent, view)).toBe(true);
    const [name] = [...w.blobs.committed];
    expect(view).toEqual({
      id: expect.any(String),
      name: "Jazz night",
      price: 1500.5,
      start_time: "2030-02-01T15:30:00.000Z",
      end_time: "2030-02-01T17:00:00.000Z",
      duration: 90,
      event_type: "offline",
      participants_limit: 40,
      is_active: true,
      store: {
        id: w.store._id,
        name: "Jazz Club",
        is_blogger: false,
        seller_type: "store",
        logo_url: "https://cdn.example.com/logo.png",
      },
      short_desc: "Live jazz",
      detail_desc: "Three sets of live jazz",
      format_price: "1500.50 RUB",
      platform_price: 1500.5,
      meeting_link: "https://meet.example.com/jazz",
      meeting_password: "pw",
      meeting_platform: "Zoom",
      cover_picture_url: `/media/${name}`,
      question_id: QUESTION.id,
      location: { address: "Tverskaya 1", country: "Russia", city: "Moscow" },
      round_id: eventRoundId(view.id),
    });
  });

  it("when an event is created, then the picture is committed once with its sniffed type and nothing stays staged", async () => {
    const picture = stagedPng();
    const view = await run({ picture });
    expect(w.blobs.commit).toHaveBeenCalledTimes(1);
    expect(w.blobs.commit).toHaveBeenCalledWith(picture.staged_id, "image/png");
    expect(w.blobs.staged.size).toBe(0);
    expect([...w.blobs.committed]).toHaveLength(1);
    expect(view.cover_picture_url).toMatch(/^\/media\/[0-9a-f-]{36}\.png$/);
    expect(w.blobs.discard).not.toHaveBeenCalled();
    expect(w.blobs.remove).not.toHaveBeenCalled();
  });

  it("when an event is created, then its item is stored with the event sub-document", async () => {
    const view = await run();
    const item = await w.repo.findItem(view.id);
    const [name] = [...w.blobs.committed];
    expect(item).toMatchObject({
      _id: view.id,
      store_id: w.store._id,
      kind: "event",
      name: "Jazz night",
      platform_price: 1500.5,
      assets: [{ name: "cover", path: `/media/${name}`, type: "image", sort_order: 0, is_primary: true }],
      event: {
        price: 1500.5,
        is_active: true,
        discount_percent: 12.5,
        end_time: new Date("2030-02-01T17:00:00.000Z"),
        cover_picture: name,
        question_id: QUESTION.id,
        created_by: MANAGER,
      },
    });
  });

  it("when an event is created, then exactly one store.event.created is announced with the event's data", async () => {
    const view = await run();
    expect(w.deps.announce).toHaveBeenCalledTimes(1);
    const [event] = w.emitted;
    expect(check(StoreEventCreatedEvent, event)).toBe(true);
    expect(event).toEqual({
      event_id: view.id,
      round_id: eventRoundId(view.id),
      store_id: w.store._id,
      owner_id: MANAGER,
      price: 1500.5,
      currency: "RUB",
      start_time: view.start_time,
      end_time: view.end_time,
      participants_limit: 40,
      discount_percent: 12.5,
      question_id: QUESTION.id,
      is_active: true,
      store_name: "Jazz Club",
      location: jazzClubPlace,
    });
  });

  it("when the question is picked, then it is picked once and reported as question_id", async () => {
    w.deps.pickQuestion.mockResolvedValueOnce({ id: 6, theme: "Cuisine", emoji: null, category: "Food" });
    const view = await run();
    expect(w.deps.pickQuestion).toHaveBeenCalledTimes(1);
    expect(view.question_id).toBe(6);
    expect(w.emitted[0].question_id).toBe(6);
  });

  it("when an online event without a place is created, then its location is null in the view and the event", async () => {
    const view = await run({ fields: onlineFields({ is_active: "0" }) });
    expect(check(StoreEvent, view)).toBe(true);
    expect(view.location).toBeNull();
    expect(view).toMatchObject({
      event_type: "online",
      is_active: false,
      price: 0,
      format_price: "0.00 RUB",
      short_desc: null,
      detail_desc: null,
      meeting_link: null,
      meeting_password: null,
      meeting_platform: null,
    });
    expect(check(StoreEventCreatedEvent, w.emitted[0])).toBe(true);
    expect(w.emitted[0]).toMatchObject({ location: null, discount_percent: 0, is_active: false });
  });

  it("when the store belongs to a blogger, then seller_type is blogger and the store's currency is used", async () => {
    const view = await run({ storeId: String(w.blogger._id), fields: onlineFields({ price: "20" }) });
    expect(view.store).toEqual({
      id: w.blogger._id,
      name: "Anna's blog",
      is_blogger: true,
      seller_type: "blogger",
      logo_url: null,
    });
    expect(view.format_price).toBe("20.00 USD");
    expect(w.emitted[0].currency).toBe("USD");
  });

  it.each([
    ["https://api.example.com", "https://api.example.com/media/"],
    ["https://api.example.com/", "https://api.example.com/media/"],
  ])("when publicUrl is %p, then cover_picture_url is absolute under %p", async (publicUrl, prefix) => {
    w.deps.publicUrl = publicUrl;
    const view = await run();
    const [name] = [...w.blobs.committed];
    expect(view.cover_picture_url).toBe(`${prefix}${name}`);
  });

  it("when two events are created, then each has its own id, round id and picture", async () => {
    const a = await run();
    const b = await run();
    expect(a.id).not.toBe(b.id);
    expect(a.round_id).not.toBe(b.round_id);
    expect(a.cover_picture_url).not.toBe(b.cover_picture_url);
    expect(w.emitted.map((e) => e.round_id)).toEqual([a.round_id, b.round_id]);
  });
});

describe("mediaUrl", () => {
  it("when the base is empty, then the link is relative under /media/", () => {
    expect(mediaUrl("", "a.png")).toBe("/media/a.png");
  });
});

describe("createStoreEvent, store and permission", () => {
  it("when the store does not exist, then NotFoundError 'Store not found' and the staged picture is discarded", async () => {
    const picture = stagedPng();
    const err = await failure(run({ storeId: "999999", picture }));
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err.message).toBe("Store not found");
    expect((err as NotFoundError).code).toBe(404);
    expect(w.blobs.discard).toHaveBeenCalledWith(picture.staged_id);
    expect(w.blobs.commit).not.toHaveBeenCalled();
    await expectNothingLeft();
  });

  it.each(["abc", "1.5", "-1", "1e3", "0x1", " 1", "", "1234567890123456", "../1"])(
    "when the store id is %p (not an integer id), then it is simply not found without a lookup",
    async (storeId) => {
      const findStore = jest.spyOn(w.repo, "findStore");
      const err = await failure(run({ storeId }));
      expect(err).toBeInstanceOf(NotFoundError);
      expect(err.message).toBe("Store not found");
      expect(findStore).not.toHaveBeenCalled();
      await expectNothingLeft();
    },
  );

  it("when the caller is not a manager of the store, then ForbiddenError 'Not enough permissions' and the picture is discarded", async () => {
    const picture = stagedPng();
    const err = await failure(run({ userId: OUTSIDER, picture }));
    expect(err).toBeInstanceOf(ForbiddenError);
    expect(err.message).toBe("Not enough permissions");
    expect((err as ForbiddenError).code).toBe(403);
    expect(w.blobs.discard).toHaveBeenCalledWith(picture.staged_id);
    expect(w.deps.pickQuestion).not.toHaveBeenCalled();
    await expectNothingLeft();
  });

  it("when an outsider also sends a bad form, then the permission answer comes first", async () => {
    const err = await failure(run({ userId: OUTSIDER, fields: {} }));
    expect(err).toBeInstanceOf(ForbiddenError);
  });
});

describe("createStoreEvent, validation", () => {
  it("when the form has bad fields, then every issue is reported at once and the staged picture is discarded", async () => {
    const picture = stagedPng();
    const err = await failure(
      run({ fields: offlineFields({ price: "free", duration: "0", latitude: "100" }), picture }),
    );
    expect(validationIssues(err).map((i) => [i.type, ...i.loc])).toEqual([
      ["float_parsing", "price"],
      ["greater_than", "duration"],
      ["less_than_equal", "latitude"],
    ]);
    expect(w.blobs.discard).toHaveBeenCalledWith(picture.staged_id);
    expect(w.blobs.commit).not.toHaveBeenCalled();
    await expectNothingLeft();
  });

  it("when the picture is missing, then main_picture is reported missing", async () => {
    const err = await failure(run({ picture: null }));
    expect(validationIssues(err)).toEqual([
      { type: "missing", loc: ["main_picture"], msg: "Field required", input: null },
    ]);
    expect(w.blobs.discard).not.toHaveBeenCalled();
    await expectNothingLeft();
  });

  it("when the picture is empty (0 bytes), then main_picture is reported missing and the empty file discarded", async () => {
    const picture = { ...stagedPng(), size: 0, mime: null };
    const err = await failure(run({ picture }));
    expect(validationIssues(err)).toEqual([
      { type: "missing", loc: ["main_picture"], msg: "Field required", input: null },
    ]);
    expect(w.blobs.discard).toHaveBeenCalledWith(picture.staged_id);
    await expectNothingLeft();
  });

  it.each([null, "image/gif", "text/plain", "image/svg+xml"])(
    "when the picture's sniffed type is %p, then main_picture is a value_error and the file is discarded",
    async (mime) => {
      const picture = { ...stagedPng(), mime };
      const err = await failure(run({ picture }));
      expect(validationIssues(err)).toEqual([
        {
          type: "value_error",
          loc: ["main_picture"],
          msg: "Value error, main_picture must be a JPEG, PNG or WebP image",
          input: null,
        },
      ]);
      expect(w.blobs.discard).toHaveBeenCalledWith(picture.staged_id);
      await expectNothingLeft();
    },
  );

  it.each(["image/jpeg", "image/webp"])("when the picture is %s, then it is accepted", async (mime) => {
    const view = await run({ picture: { ...stagedPng(), mime } });
    expect(view.cover_picture_url).toMatch(mime === "image/jpeg" ? /\.jpg$/ : /\.webp$/);
  });

  it("when both the form and the picture are bad, then the form issues and the picture issue come together", async () => {
    const err = await failure(run({ fields: onlineFields({ name: "" }), picture: null }));
    expect(validationIssues(err).map((i) => [i.type, ...i.loc])).toEqual([
      ["missing", "name"],
      ["missing", "main_picture"],
    ]);
  });

  it("when the form is refused, then no question is picked and no item is written", async () => {
    const create = jest.spyOn(w.repo, "createEventItem");
    await failure(run({ fields: offlineFields({ start_time: "2029-01-01T00:00:00Z" }) }));
    expect(w.deps.pickQuestion).not.toHaveBeenCalled();
    expect(create).not.toHaveBeenCalled();
  });
});

describe("createStoreEvent, rollback", () => {
  it("when store.event.created cannot be published now, then the event stands and its announcement waits in the item's outbox", async () => {
    w.deps.announce.mockResolvedValueOnce(undefined); // the channel did not take it: left to the relay
    const view = await run();
    await expect(w.repo.findItem(view.id)).resolves.not.toBeNull();
    const pending = await w.repo.outbox.pending(10);
    expect(pending).toHaveLength(1);
    expect(pending[0]).toMatchObject({ docId: view.id, entry: { channel: "store.event.created" } });
    expect(check(StoreEventCreatedEvent, pending[0].entry.payload)).toBe(true);
    expect(w.blobs.remove).not.toHaveBeenCalled();
  });

  it("when writing the event item fails, then the committed picture is removed and the error rethrown", async () => {
    const boom = new Error("disk full");
    jest.spyOn(w.repo, "createEventItem").mockRejectedValueOnce(boom);
    const del = jest.spyOn(w.repo, "deleteItem");
    const err = await failure(run());
    expect(err).toBe(boom);
    expect(w.blobs.commit).toHaveBeenCalledTimes(1);
    const name = await w.blobs.commit.mock.results[0].value;
    expect(w.blobs.remove).toHaveBeenCalledWith(name);
    expect(del).not.toHaveBeenCalled();
    expect(w.deps.announce).not.toHaveBeenCalled();
    await expectNothingLeft();
  });

  it("when picking a question fails, then the staged picture is discarded and nothing is committed", async () => {
    const picture = stagedPng();
    w.deps.pickQuestion.mockRejectedValueOnce(new Error("rounds unavailable"));
    await expect(run({ picture })).rejects.toThrow("rounds unavailable");
    expect(w.blobs.commit).not.toHaveBeenCalled();
    expect(w.blobs.discard).toHaveBeenCalledWith(picture.staged_id);
    await expectNothingLeft();
  });

  it("when committing the picture fails, then the staged picture is discarded and no item is written", async () => {
    const picture = stagedPng();
    w.blobs.failCommit = new Error("rename failed");
    const create = jest.spyOn(w.repo, "createEventItem");
    await expect(run({ picture })).rejects.toThrow("rename failed");
    expect(create).not.toHaveBeenCalled();
    expect(w.blobs.discard).toHaveBeenCalledWith(picture.staged_id);
    await expectNothingLeft();
  });
});
