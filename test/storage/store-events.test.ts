/**
 * What store events write, on every engine: the event item with its `event` sub-document, the question
 * catalog the event's round draws from, and the round opened under the event's derived id (a redelivered
 * store.event.created meets a duplicate key and opens nothing).
 */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { LocalBlobStore } from "../../services/stores/blob-store";
import { mediaSweepTasks } from "../../services/stores/media-sweep";
import { eventRoundParams } from "../../services/rounds/event-round";
import { QuestionsRepository, defaultQuestions } from "../../services/rounds/questions";
import { RoundsRepository } from "../../services/rounds/rounds.repository";
import type { EventInput } from "../../services/stores/event-form";
import { StoresRepository, type StoreDoc } from "../../services/stores/stores.repository";
import { eventRoundId, type QuestionInfo } from "../../shared/contracts/rounds";
import type { StoreEventCreatedEvent } from "../../shared/contracts/stores";
import { DuplicateKeyError } from "../../shared/storage";
import { describeEachEngine, uid } from "./engines";
import { jazzClubPlace } from "../unit/support/fixtures";
import { picture } from "../unit/support/pictures";

const HOUR = 3_600_000;

const QUESTION: QuestionInfo = { id: 2, theme: "Football", emoji: "⚽", category: "Sport" };

const offlineForm = (overrides: Partial<EventInput> = {}): EventInput => ({
  name: "Jazz night",
  price: 1500.5,
  event_type: "offline",
  is_active: true,
  discount_percent: 12.5,
  duration: 90,
  participants_limit: 40,
  short_desc: "Live jazz",
  detail_desc: "Three sets",
  start_time: new Date("2030-02-01T15:30:00.000Z"),
  city: "Moscow",
  address: "Tverskaya 1",
  postal_code: "125009",
  country: "Russia",
  latitude: 55.7558,
  longitude: 37.6173,
  meeting_link: "https://meet.example.com/jazz",
  meeting_password: "pw",
  meeting_platform: "Zoom",
  ...overrides,
});

describeEachEngine("StoresRepository event items", (store) => {
  let repo: StoresRepository;
  let shop: StoreDoc;

  beforeAll(async () => {
    repo = new StoresRepository(store());
    await repo.init();
    shop = await repo.createStore(
      { name: "Jazz Club", is_blogger: false, manager_ids: ["manager-1"] },
      "RUB",
      new Date("2030-01-01T00:00:00.000Z"),
    );
  });

  it("when an event item is created, then findItem returns it whole with its event sub-document and Dates", async () => {
    const now = new Date("2030-01-01T12:00:00.123Z");
    const created = await repo.createEventItem(
      {
        store: shop,
        form: offlineForm(),
        question: QUESTION,
        pictureName: "cover-1.png",
        createdBy: "manager-1",
      },
      now,
    );
    const found = await repo.findItem(created._id);
    expect(found).toEqual(created);
    expect(found).toEqual({
      _id: created._id,
      store_id: shop._id,
      kind: "event",
      name: "Jazz night",
      sku: null,
      platform_price: 1500.5,
      assets: [{ name: "cover", path: "/media/cover-1.png", type: "image", sort_order: 0, is_primary: true }],
      duration: 90,
      meeting_link: "https://meet.example.com/jazz",
      meeting_password: "pw",
      meeting_platform: "Zoom",
      event_type: "offline",
      short_desc: "Live jazz",
      detail_desc: "Three sets",
      participants_limit: 40,
      category: null,
      location: {
        country: "Russia",
        city: "Moscow",
        address: "Tverskaya 1",
        latitude: "55.7558",
        longitude: "37.6173",
        postal_code: "125009",
      },
      attribute_values: [],
      start_time: new Date("2030-02-01T15:30:00.000Z"),
      created_at: now,
      event: {
        price: 1500.5,
        is_active: true,
        discount_percent: 12.5,
        end_time: new Date("2030-02-01T17:00:00.000Z"),
        cover_picture: "cover-1.png",
        question_id: QUESTION.id,
        created_by: "manager-1",
      },
    });
    expect(found?.start_time).toBeInstanceOf(Date);
    expect(found?.created_at).toBeInstanceOf(Date);
    expect(found?.event?.end_time).toBeInstanceOf(Date);
  });

  it("when an online event without a place is created, then its location is null and its nulls are stored", async () => {
    const form = offlineForm({
      event_type: "online",
      is_active: false,
      discount_percent: 0,
      city: null,
      address: null,
      postal_code: null,
      country: null,
      latitude: null,
      longitude: null,
      meeting_link: null,
      meeting_password: null,
      meeting_platform: null,
      short_desc: null,
      detail_desc: null,
    });
    const created = await repo.createEventItem(
      { store: shop, form, question: QUESTION, pictureName: "cover-2.webp", createdBy: "manager-1" },
      new Date(),
    );
    const found = await repo.findItem(created._id);
    expect(found?.location).toBeNull();
    expect(found?.meeting_link).toBeNull();
    expect(found?.short_desc).toBeNull();
    expect(found?.event).toMatchObject({
      is_active: false,
      discount_percent: 0,
      cover_picture: "cover-2.webp",
    });
  });

  it("when an event item is deleted, then findItem no longer finds it and other items stay", async () => {
    const input = { store: shop, form: offlineForm(), question: QUESTION, createdBy: "manager-1" };
    const a = await repo.createEventItem({ ...input, pictureName: "a.png" }, new Date());
    const b = await repo.createEventItem({ ...input, pictureName: "b.png" }, new Date());
    await repo.deleteItem(a._id);
    await expect(repo.findItem(a._id)).resolves.toBeNull();
    expect((await repo.findItem(b._id))?.event?.cover_picture).toBe("b.png");
  });

  it("when an item that does not exist is deleted, then deleteItem resolves quietly", async () => {
    await expect(repo.deleteItem(randomUUID())).resolves.toBeUndefined();
  });

  it("when an event item shows a picture, then pictureInUse says so, and not for a name no item shows", async () => {
    const input = { store: shop, form: offlineForm(), question: QUESTION, createdBy: "manager-1" };
    const name = `${randomUUID()}.png`;
    await repo.createEventItem({ ...input, pictureName: name }, new Date());
    await expect(repo.pictureInUse(name)).resolves.toBe(true);
    await expect(repo.pictureInUse(`${randomUUID()}.png`)).resolves.toBe(false);
  });

  it("when the media sweep runs, then a stale picture no item shows and a stale staged file go; a shown picture stays", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "media-sweep-"));
    try {
      const blobs = new LocalBlobStore(dir);
      const place = async () =>
        blobs.commit((await blobs.stage(Readable.from([picture("png", 100)]), 1000)).stagedId, "image/png");
      const shown = await place();
      const orphan = await place(); // its item was never written (a kill between move and insert)
      const input = { store: shop, form: offlineForm(), question: QUESTION, createdBy: "manager-1" };
      await repo.createEventItem({ ...input, pictureName: shown }, new Date());
      fs.writeFileSync(path.join(dir, ".staging", randomUUID()), "half an upload"); // a kill -9 mid-upload
      const lost: string[] = [];
      const tasks = mediaSweepTasks(blobs, repo, HOUR, (n) => lost.push(n));
      const later = new Date(Date.now() + 2 * HOUR);
      const removed = Object.fromEntries(
        await Promise.all(tasks.map(async (t) => [t.name, await t.run(later)] as const)),
      );
      expect(removed).toEqual({ "staged uploads": 1, "pictures no item shows": 1 });
      expect(lost).toEqual([orphan]);
      expect(fs.readdirSync(dir).filter((f) => f !== ".staging")).toEqual([shown]);
      expect(fs.readdirSync(path.join(dir, ".staging"))).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describeEachEngine("QuestionsRepository", (store) => {
  let questions: QuestionsRepository;

  beforeAll(() => {
    questions = new QuestionsRepository(store());
  });

  it("when the catalog is empty, then pick fails; after ensureCatalog twice, then the 6 questions are there once", async () => {
    await expect(questions.pick()).rejects.toThrow("The question catalog is empty");
    await questions.ensureCatalog();
    await questions.ensureCatalog();
    const all = await questions.all();
    expect(all).toHaveLength(6);
    expect(all).toEqual(defaultQuestions);
  });

  it("when a question is picked, then it is an entry of the catalog", async () => {
    await questions.ensureCatalog();
    const picks = await Promise.all(Array.from({ length: 20 }, () => questions.pick()));
    for (const q of picks) expect(defaultQuestions).toContainEqual(q);
  });

  it("when a question is looked up by id, then the catalog entry comes back, or null for an unknown id", async () => {
    await questions.ensureCatalog();
    await expect(questions.byId(3)).resolves.toEqual({
      id: 3,
      theme: "World capitals",
      emoji: "🌍",
      category: "Geography",
    });
    await expect(questions.byId(99)).resolves.toBeNull();
  });

  it("when ensureCatalog runs concurrently, then the catalog still holds 6 questions", async () => {
    await Promise.all([questions.ensureCatalog(), questions.ensureCatalog(), questions.ensureCatalog()]);
    expect(await questions.all()).toHaveLength(6);
  });
});

describeEachEngine("RoundsRepository event rounds", (store) => {
  let rounds: RoundsRepository;

  beforeAll(async () => {
    rounds = new RoundsRepository(store());
    await rounds.init();
  });

  const createdEvent = (eventId: string): StoreEventCreatedEvent => ({
    event_id: eventId,
    round_id: eventRoundId(eventId),
    store_id: 1,
    owner_id: uid("owner"),
    price: 1500.5,
    currency: "RUB",
    start_time: "2030-02-01T15:30:00.000Z",
    end_time: "2030-02-01T17:00:00.000Z",
    participants_limit: 40,
    discount_percent: 12.5,
    question_id: QUESTION.id,
    is_active: true,
    store_name: "Jazz Club",
    location: jazzClubPlace,
  });

  it("when an event's round is created, then it is stored under the event's round id as an event round", async () => {
    const e = createdEvent(randomUUID());
    const now = new Date("2030-01-01T12:00:00.000Z");
    const doc = await rounds.create(eventRoundParams(e, QUESTION), e.currency, now);
    expect(doc._id).toBe(e.round_id);
    const found = await rounds.findById(e.round_id);
    expect(found).toMatchObject({
      _id: e.round_id,
      item_id: e.event_id,
      owner_id: e.owner_id,
      entry_fee: "1500.50",
      currency: "RUB",
      variant: "event",
      is_event: true,
      max_members_count: 40,
      members_count: 0,
      question: { id: QUESTION.id, theme: "Football", emoji: "⚽", category: "Sport" },
      certificate: { text: "13% off at Jazz Club", discount_percent: 13 },
      start_time: new Date(e.start_time),
      end_time: new Date(e.end_time),
    });
    expect(found?.locations[0].city.country).toEqual({
      code: "RU",
      name: "Russia",
      phone_code: "+7",
      currency: "RUB",
    });
  });

  it("when the same event's round is created twice, then the second throws DuplicateKeyError and the first stays", async () => {
    const e = createdEvent(randomUUID());
    const first = await rounds.create(eventRoundParams(e, QUESTION), e.currency, new Date());
    await expect(rounds.create(eventRoundParams(e, QUESTION), e.currency, new Date())).rejects.toBeInstanceOf(
      DuplicateKeyError,
    );
    const found = await rounds.findById(e.round_id);
    expect(found?.uniq_id).toBe(first.uniq_id);
    expect(found?.certificate.id).toBe(first.certificate.id);
  });

  it("when the same event is delivered 5 times at once, then exactly one round is created", async () => {
    const e = createdEvent(randomUUID());
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, () => rounds.create(eventRoundParams(e, QUESTION), e.currency, new Date())),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(rejected).toHaveLength(4);
    for (const r of rejected) expect(r.reason).toBeInstanceOf(DuplicateKeyError);
    await expect(rounds.findById(e.round_id)).resolves.not.toBeNull();
  });

  it("when two different events open rounds, then both exist under their own ids", async () => {
    const a = createdEvent(randomUUID());
    const b = createdEvent(randomUUID());
    await rounds.create(eventRoundParams(a, QUESTION), "RUB", new Date());
    await rounds.create(eventRoundParams(b, QUESTION), "RUB", new Date());
    expect(a.round_id).not.toBe(b.round_id);
    expect((await rounds.findById(a.round_id))?.item_id).toBe(a.event_id);
    expect((await rounds.findById(b.round_id))?.item_id).toBe(b.event_id);
  });
});
