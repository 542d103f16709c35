import { contractFetch } from "../support/contract";
import fs from "node:fs";
import path from "node:path";
import { StoreEvent } from "../../shared/contracts/stores";
import { Round } from "../../shared/contracts/round";
import { check } from "../../shared/validation";
import { api, newUser, startSystem, topology, type System } from "../support/system";
import { eventFields, eventForm, heldUpload, jpegBytes, pngBytes, postRawUpload } from "../support/upload";
import { UPLOAD_SLOT_WAIT_MS, UPLOADS_MAX_PER_CALLER } from "../../services/gateway/upload-slots";

let sys: System;
beforeAll(async () => {
  sys = await startSystem({ env: { PICTURE_MAX_BYTES: String(256 * 1024) } });
});
afterAll(() => sys.stop());

const storePath = (id: number | string = sys.manifest.stores.alice_store) => `/stores/${id}/events`;
const post = (form: FormData, token = sys.manifest.users.alice.access_token, storeId?: number | string) =>
  fetch(`${sys.baseUrl}${storePath(storeId)}`, {
    method: "POST",
    body: form,
    headers: { authorization: `Bearer ${token}` },
  });
const stagingDir = () => path.join(sys.dataDirOf("stores"), "media", ".staging");
const mediaFiles = () =>
  fs.readdirSync(path.join(sys.dataDirOf("stores"), "media")).filter((f) => !f.startsWith("."));
const eventItems = async () =>
  (
    await (
      await sys.inspect("stores")
    )
      .collection<{ _id: string; kind: string }>("items")
      .find({ kind: "event" })
  ).length;

describe("POST /stores/{store_id}/events", () => {
  it("when a manager posts a valid form, then 200 with the §2.12 shape and the picture is served back byte for byte", async () => {
    const picture = pngBytes(20_000);
    const res = await post(eventForm(eventFields(), picture));
    expect(res.status).toBe(200);
    const body: any = await res.json();
    expect(check(StoreEvent, body)).toBe(true);
    expect(body).toEqual(
      expect.objectContaining({
        name: "Jazz evening",
        price: 1500,
        platform_price: 1500,
        format_price: "1500.00 RUB",
        duration: 90,
        participants_limit: 30,
        event_type: "offline",
        is_active: true,
        location: { address: "Tverskaya St, 1", country: "Russia", city: "Moscow" },
        store: expect.objectContaining({ id: sys.manifest.stores.alice_store, seller_type: "store" }),
      }),
    );
    expect(Date.parse(body.end_time) - Date.parse(body.start_time)).toBe(90 * 60_000);
    expect(body.cover_picture_url).toMatch(/^\/media\/[0-9a-f-]{36}\.png$/);
    const pic = await contractFetch(`${sys.baseUrl}${body.cover_picture_url}`);
    expect(pic.status).toBe(200);
    expect(pic.headers.get("content-type")).toBe("image/png");
    // HEAD: the same status and headers, no body.
    const head = await fetch(`${sys.baseUrl}${body.cover_picture_url}`, { method: "HEAD" });
    const compared = ["content-type", "content-length", "cache-control", "x-content-type-options"];
    expect([head.status, ...compared.map((h) => head.headers.get(h))]).toEqual([
      200,
      ...compared.map((h) => pic.headers.get(h)),
    ]);
    expect((await head.arrayBuffer()).byteLength).toBe(0);
    expect(Buffer.from(await pic.arrayBuffer()).equals(picture)).toBe(true);
  });

  it("when an event is created, then its round is open, an event round, and joinable", async () => {
    const res = await post(
      eventForm(eventFields({ participants_limit: "2", discount_percent: "25" }), jpegBytes()),
    );
    const event: any = await res.json();
    const bob = sys.manifest.users.bob;
    const round = await api(sys, "GET", `/rounds/${event.round_id}`, { token: bob.access_token });
    expect(round.status).toBe(200);
    expect(check(Round, round.body)).toBe(true);
    expect(round.body).toEqual(
      expect.objectContaining({
        is_event: true,
        variant: "event",
        max_members_count: 2,
        entry_fee: "1500.00",
        start_time: event.start_time,
        end_time: event.end_time,
        certificate: expect.objectContaining({ discount_percent: 25 }),
      }),
    );
    expect(round.body.item.id).toBe(event.id);
    expect(round.body.locations[0].city.country).toEqual({
      code: "RU",
      name: "Russia",
      phone_code: "+7",
      currency: "RUB",
    });
    const join = await api(sys, "POST", `/rounds/${event.round_id}/join`, {
      token: bob.access_token,
      json: null,
    });
    expect(join.status).toBe(200);
    expect(join.body.members_count).toBe(1);
  });

  it("when store.event.created is delivered again, then no second round is opened", async () => {
    const res = await post(eventForm(eventFields(), pngBytes()));
    const event: any = await res.json();
    await sys.settle();
    const rounds = (await sys.inspect("rounds")).collection<{ _id: string; item_id: string }>("rounds");
    expect(await rounds.count({ item_id: event.id })).toBe(1);
    const payload = {
      event_id: event.id,
      round_id: event.round_id,
      store_id: event.store.id,
      owner_id: sys.manifest.users.alice.id,
      price: 1500,
      currency: "RUB",
      start_time: event.start_time,
      end_time: event.end_time,
      participants_limit: 30,
      discount_percent: 15,
      question_id: event.question_id,
      is_active: true,
      store_name: event.store.name,
      location: null,
    };
    await sys.broker.emit("store.event.created", payload);
    await sys.settle();
    expect(await rounds.count({ item_id: event.id })).toBe(1);
  });

  it("when the form is online without a place but with a meeting link, then 200 and no location", async () => {
    const fields = eventFields({
      event_type: "online",
      city: undefined,
      address: undefined,
      latitude: undefined,
      longitude: undefined,
      country: undefined,
      postal_code: undefined,
      meeting_link: "https://meet.example.com/jazz",
      meeting_platform: "Zoom",
    });
    const res = await post(eventForm(fields, pngBytes()));
    const body: any = await res.json();
    expect(res.status).toBe(200);
    expect(body).toEqual(
      expect.objectContaining({
        location: null,
        meeting_link: "https://meet.example.com/jazz",
        meeting_platform: "Zoom",
      }),
    );
  });

  it("when several fields are bad, then 422 reports all of them at once at body.<field>", async () => {
    const before = await eventItems();
    const fields = eventFields({
      price: "-1",
      duration: "1.5",
      participants_limit: "0",
      is_active: "maybe",
      discount_percent: "101",
      start_time: "2030-01-01 10:00",
      latitude: "91",
      longitude: "abc",
      name: undefined,
      meeting_link: "ftp://files.example.com",
    });
    const res = await post(eventForm(fields, pngBytes()));
    expect(res.status).toBe(422);
    const body: any = await res.json();
    const byField = Object.fromEntries(body.detail.map((d: any) => [d.loc[1], d.type]));
    expect(body.detail.every((d: any) => d.loc[0] === "body")).toBe(true);
    expect(byField).toEqual({
      name: "missing",
      price: "greater_than_equal",
      duration: "int_parsing",
      participants_limit: "greater_than_equal",
      is_active: "bool_parsing",
      discount_percent: "less_than_equal",
      start_time: "datetime_parsing",
      latitude: "less_than_equal",
      longitude: "float_parsing",
      meeting_link: "url_scheme",
    });
    expect(await eventItems()).toBe(before);
    expect(fs.readdirSync(stagingDir())).toEqual([]);
  });

  it("when a required field is missing, then 422 missing with its input null", async () => {
    const res = await post(eventForm(eventFields({ participants_limit: undefined }), pngBytes()));
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({
      detail: [{ type: "missing", loc: ["body", "participants_limit"], msg: "Field required", input: null }],
    });
  });

  it("when main_picture is missing, then 422 missing at body.main_picture", async () => {
    const res = await post(eventForm(eventFields(), null));
    expect(res.status).toBe(422);
    expect(((await res.json()) as any).detail).toEqual([
      expect.objectContaining({ type: "missing", loc: ["body", "main_picture"] }),
    ]);
  });

  it("when a text file is sent as image/png, then 422 because the bytes are not an image, and nothing is kept", async () => {
    const filesBefore = mediaFiles().length;
    const res = await post(
      eventForm(eventFields(), Buffer.from("definitely not an image, just text pretending"), "image/png"),
    );
    expect(res.status).toBe(422);
    expect(((await res.json()) as any).detail).toEqual([
      expect.objectContaining({
        type: "value_error",
        loc: ["body", "main_picture"],
        msg: expect.stringMatching(/JPEG, PNG or WebP/),
      }),
    ]);
    expect(mediaFiles().length).toBe(filesBefore);
    expect(fs.readdirSync(stagingDir())).toEqual([]);
  });

  it("when the picture is over the limit, then 413 arrives before the whole body is sent and nothing is kept", async () => {
    const before = await eventItems();
    const total = 32 * 1024 * 1024;
    const res = await postRawUpload(
      `${sys.baseUrl}${storePath()}`,
      sys.manifest.users.alice.access_token,
      total,
    );
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toEqual({ detail: expect.stringMatching(/main_picture is larger than/) });
    expect(res.sent).toBeLessThan(total);
    expect(await eventItems()).toBe(before);
    await new Promise((r) => setTimeout(r, 100));
    expect(fs.readdirSync(stagingDir())).toEqual([]);
  });

  it("when the body is not multipart, then 415", async () => {
    const res = await api(sys, "POST", storePath(), {
      token: sys.manifest.users.alice.access_token,
      json: eventFields(),
    });
    expect(res.status).toBe(415);
    expect(res.body).toEqual({ detail: "Content-Type must be multipart/form-data" });
  });

  it("when two files are sent, then 400 and no staged file remains", async () => {
    const fd = eventForm(eventFields(), pngBytes());
    fd.append("main_picture", new Blob([pngBytes()], { type: "image/png" }), "second.png");
    const res = await post(fd);
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).detail).toMatch(/Too many files/);
    await new Promise((r) => setTimeout(r, 100));
    expect(fs.readdirSync(stagingDir())).toEqual([]);
  });

  it("when the caller does not manage the store, then 403 Not enough permissions", async () => {
    const res = await post(eventForm(eventFields(), pngBytes()), sys.manifest.users.carol.access_token);
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ detail: "Not enough permissions" });
  });

  it.each([["999999"], ["not-a-number"]])(
    "when the store %s does not exist, then 404 Store not found",
    async (id) => {
      const res = await post(eventForm(eventFields(), pngBytes()), sys.manifest.users.alice.access_token, id);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ detail: "Store not found" });
    },
  );

  it("when no token is sent, then 401 before anything else", async () => {
    const res = await contractFetch(`${sys.baseUrl}${storePath()}`, {
      method: "POST",
      body: eventForm(eventFields(), pngBytes()),
    });
    expect(res.status).toBe(401);
  });

  it("when 20 managers of a store upload at once, then all succeed with distinct events, rounds and pictures", async () => {
    // One upload per manager: a caller's own uploads at once are bounded (UPLOADS_MAX_PER_CALLER).
    const managers = await Promise.all(Array.from({ length: 20 }, () => newUser(sys.broker, "manager")));
    const store = await sys.broker.call<any, any>("stores.createStore", {
      name: "Busy store",
      manager_ids: managers.map((m) => m.id),
      is_blogger: false,
    });
    const pictures = Array.from({ length: 20 }, (_, i) => pngBytes(10_000 + i));
    const results = await Promise.all(
      pictures.map((p, i) =>
        post(
          eventForm(eventFields({ name: `Concurrent ${p.length}` }), p),
          managers[i].access_token,
          store.id,
        ),
      ),
    );
    const bodies: any[] = await Promise.all(results.map((r) => r.json()));
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(new Set(bodies.map((b) => b.id)).size).toBe(20);
    expect(new Set(bodies.map((b) => b.round_id)).size).toBe(20);
    for (let i = 0; i < 20; i++) {
      const pic = await contractFetch(`${sys.baseUrl}${bodies[i].cover_picture_url}`);
      expect(Buffer.from(await pic.arrayBuffer()).equals(pictures[i])).toBe(true);
    }
  });
});

describe("an honest burst of uploads", () => {
  it("when one manager sends ten small uploads at once (more than UPLOADS_MAX_PER_CALLER), then the ones beyond wait for a slot and all ten succeed", async () => {
    expect(UPLOADS_MAX_PER_CALLER).toBeLessThan(10);
    const pictures = Array.from({ length: 10 }, (_, i) => pngBytes(5_000 + i));
    const results = await Promise.all(
      pictures.map((p) => post(eventForm(eventFields({ name: `Burst ${p.length}` }), p))),
    );
    const bodies: any[] = await Promise.all(results.map((r) => r.json()));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(new Set(bodies.map((b) => b.id)).size).toBe(10);
  });

  it("when UPLOAD_SLOT_WAIT_MS passes without a slot, then 503 with Retry-After, and the upload can be sent again", async () => {
    const token = sys.manifest.users.alice.access_token;
    const url = `${sys.baseUrl}/stores/${sys.manifest.stores.alice_store}/events`;
    // Uploads that hold every one of alice's slots while the rest of their bodies is held back.
    const slow = Array.from({ length: UPLOADS_MAX_PER_CALLER }, (_, i) =>
      heldUpload(url, token, eventFields({ name: `Held ${i}` }), pngBytes(40_000 + i)),
    );
    // The slots are taken once the gateway has the heads: in one process it shows; across processes
    // (the gateway is another one) the test gives it half a second, a hundred times what it takes.
    if (topology === "embedded") {
      const gateway = sys.broker.getLocalService("gateway") as unknown as { uploads: { size: number } };
      while (gateway.uploads.size < UPLOADS_MAX_PER_CALLER) await new Promise((r) => setTimeout(r, 20));
    } else {
      await new Promise((r) => setTimeout(r, 500));
    }
    const started = Date.now();
    const second = await fetch(url, {
      method: "POST",
      body: eventForm(eventFields(), pngBytes(4_000)),
      headers: { authorization: `Bearer ${token}` },
    });
    expect(second.status).toBe(503);
    expect(second.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await second.json()).toEqual({
      detail: expect.stringMatching(new RegExp(`for this user \\(at most ${UPLOADS_MAX_PER_CALLER}\\)`)),
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(UPLOAD_SLOT_WAIT_MS - 50);
    for (const s of slow) s.finish();
    for (const s of slow) expect((await s.response).status).toBe(200);
    const again = await fetch(url, {
      method: "POST",
      body: eventForm(eventFields(), pngBytes(4_000)),
      headers: { authorization: `Bearer ${token}` },
    });
    expect(again.status).toBe(200);
  }, 30_000);
});

describe("GET /media/{name}", () => {
  it("when the picture does not exist, then 404", async () => {
    const res = await api(sys, "GET", "/media/00000000-0000-0000-0000-000000000000.png");
    expect(res.status).toBe(404);
  });

  it("when the name tries to leave the media folder, then 422 at path.name, never a file", async () => {
    const res = await api(sys, "GET", "/media/..%2Fdb%2Fusers.db");
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      expect.objectContaining({ type: "string_pattern_mismatch", loc: ["path", "name"] }),
    ]);
    expect(res.text).not.toMatch(/phone/);
  });

  it("when the path has more segments than a name, then 404", async () => {
    expect((await api(sys, "GET", "/media/../db/users.db")).status).toBe(404);
  });
});

describe("a manager who is not the seed's", () => {
  it("when a new manager's store is used by its manager, then the event is created", async () => {
    const manager = await newUser(sys.broker, "manager");
    const store = await sys.broker.call<any, any>("stores.createStore", {
      name: "Pop-up",
      manager_ids: [manager.id],
      is_blogger: true,
    });
    const res = await post(eventForm(eventFields(), pngBytes()), manager.access_token, store.id);
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).store).toEqual(
      expect.objectContaining({ id: store.id, seller_type: "blogger" }),
    );
  });
});
