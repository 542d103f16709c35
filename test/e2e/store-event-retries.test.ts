/**
 * POST /stores/{store_id}/events with an Idempotency-Key (docs/decisions/0023), in one process and (the
 * `cluster` project) across processes: a retry of the same request gets the first answer and makes no
 * second event, picture or round; another request with the key is 422; a retry while the first request
 * still runs is 409 with Retry-After, and replays once the first has been answered; a request that
 * created nothing leaves the key to a retry that does.
 */
import fs from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { contractFetch } from "../support/contract";
import { storeOf } from "../../shared/storage";
import { api, newUser, startSystem, topology, type System } from "../support/system";
import { eventFields, eventForm, heldUpload, pngBytes, postRawUpload } from "../support/upload";

let sys: System;
// A cluster (the `cluster` project) first builds dist/: longer than jest's 30 s on a busy machine.
beforeAll(async () => {
  sys = await startSystem({ env: { PICTURE_MAX_BYTES: String(256 * 1024) } });
}, 120_000);
afterAll(() => sys.stop());

const url = (storeId: number = sys.manifest.stores.alice_store) => `${sys.baseUrl}/stores/${storeId}/events`;
const alice = () => sys.manifest.users.alice.access_token;
let keys = 0;
const newKey = () => `retry-${process.pid}-${++keys}-${Math.random().toString(36).slice(2, 8)}`;

const post = (
  key: string | null,
  fields = eventFields({ start_time: "2031-01-01T19:00:00+03:00" }),
  picture = pngBytes(20_000),
  token = alice(),
  storeId?: number,
) =>
  contractFetch(url(storeId), {
    method: "POST",
    body: eventForm(fields, picture),
    headers: { authorization: `Bearer ${token}`, ...(key === null ? {} : { "Idempotency-Key": key }) },
  });

const stagingDir = () => path.join(sys.dataDirOf("stores"), "media", ".staging");
const mediaFiles = () =>
  fs.readdirSync(path.join(sys.dataDirOf("stores"), "media")).filter((f) => !f.startsWith("."));
const eventItems = async () =>
  (await sys.inspect("stores")).collection<{ _id: string; kind: string }>("items").count({ kind: "event" });
const roundsOf = async (eventId: string) =>
  (await sys.inspect("rounds"))
    .collection<{ _id: string; item_id: string }>("rounds")
    .count({ item_id: eventId });

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe("POST /stores/{store_id}/events with an Idempotency-Key", () => {
  it("when the same request is sent twice, then the second gets the first answer, marked replayed, and there is one event, picture and round", async () => {
    const key = newKey();
    const events = await eventItems();
    const pictures = mediaFiles().length;
    const first = await post(key);
    expect(first.status).toBe(200);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const created: any = await first.json();
    const again = await post(key);
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.json()).toEqual(created);
    expect(await eventItems()).toBe(events + 1);
    expect(mediaFiles().length).toBe(pictures + 1);
    expect(fs.readdirSync(stagingDir())).toEqual([]);
    await sys.settle();
    expect(await roundsOf(created.id)).toBe(1);
    const round = await api(sys, "GET", `/rounds/${created.round_id}`, {
      token: sys.manifest.users.bob.access_token,
    });
    expect(round.status).toBe(200);
    expect(round.body.item.id).toBe(created.id);
  });

  it.each([
    [
      "a text field differs",
      { fields: eventFields({ start_time: "2031-01-01T19:00:00+03:00", price: "1600" }) },
    ],
    ["the picture differs", { picture: pngBytes(20_001) }],
  ] as [string, { fields?: Record<string, string>; picture?: Buffer }][])(
    "when the key comes again but %s, then 422 at the header and nothing of the retry is kept",
    async (_c, over) => {
      const key = newKey();
      expect((await post(key)).status).toBe(200);
      const events = await eventItems();
      const pictures = mediaFiles().length;
      const res = await post(key, over.fields, over.picture);
      expect(res.status).toBe(422);
      expect(await res.json()).toEqual({
        detail: [
          {
            type: "value_error",
            loc: ["header", "idempotency_key"],
            msg: "Value error, Idempotency-Key was already used with a different request",
            input: key,
          },
        ],
      });
      expect(await eventItems()).toBe(events);
      expect(mediaFiles().length).toBe(pictures);
      expect(fs.readdirSync(stagingDir())).toEqual([]);
    },
  );

  it.each([
    ["longer than 200 characters", "k".repeat(201), "string_too_long"],
    ["empty", "", "string_too_short"],
  ])("when the key is %s, then 422 at the header before the body is read", async (_c, key, type) => {
    const events = await eventItems();
    const res = await post(key);
    expect(res.status).toBe(422);
    expect(((await res.json()) as any).detail).toEqual([
      expect.objectContaining({ type, loc: ["header", "idempotency_key"] }),
    ]);
    expect(await eventItems()).toBe(events);
  });

  it("when a retry arrives while the first request is still uploading, then 409 with Retry-After, and after the first is answered the retry replays it", async () => {
    const key = newKey();
    const fields = eventFields({ start_time: "2031-02-01T19:00:00+03:00", name: "Held upload" });
    const picture = pngBytes(64 * 1024);
    const events = await eventItems();
    const first = heldUpload(url(), alice(), fields, picture, { "Idempotency-Key": key });
    // The key is taken before the body is read; a staged file means the body is being read.
    await until("the first upload to be staged", () => fs.readdirSync(stagingDir()).length > 0);
    // Refused before its body is read: a small one, so the client has sent it all when the answer comes.
    const busy = await post(key, fields, pngBytes(100));
    expect(busy.status).toBe(409);
    expect(busy.headers.get("retry-after")).toBe("1");
    expect(await busy.json()).toEqual({
      detail: expect.stringMatching(/Idempotency-Key is still in progress/),
    });
    first.finish();
    const answered = await first.response;
    expect(answered.status).toBe(200);
    const created = JSON.parse(answered.body);
    const retry = await post(key, fields, picture);
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(await retry.json()).toEqual(created);
    expect(await eventItems()).toBe(events + 1);
    expect(fs.readdirSync(stagingDir())).toEqual([]);
  });

  it("when the first attempt was refused 413 while its body arrived, then a retry with the key is not held up and creates the event", async () => {
    const key = newKey();
    const tooBig = await postRawUpload(url(), alice(), 1024 * 1024, { "Idempotency-Key": key });
    expect(tooBig.status).toBe(413);
    const res = await post(key);
    expect(res.status).toBe(200);
    expect(res.headers.get("idempotent-replayed")).toBeNull();
  });

  it("when the first attempt was refused 422 for its form, then a corrected retry with the key creates the event", async () => {
    const key = newKey();
    const events = await eventItems();
    const bad = await post(key, eventFields({ start_time: "2031-01-01T19:00:00+03:00", price: "-1" }));
    expect(bad.status).toBe(422);
    expect(await eventItems()).toBe(events);
    const good = await post(key);
    expect(good.status).toBe(200);
    expect(good.headers.get("idempotent-replayed")).toBeNull();
    expect(await eventItems()).toBe(events + 1);
  });

  it("when two managers of a store send the same key, then each gets an event of their own", async () => {
    const managers = [await newUser(sys.broker, "manager"), await newUser(sys.broker, "manager")];
    const store = await sys.broker.call<any, any>("stores.createStore", {
      name: "Two managers",
      manager_ids: managers.map((m) => m.id),
      is_blogger: false,
    });
    const key = newKey();
    const a = await post(key, undefined, undefined, managers[0].access_token, store.id);
    const b = await post(key, undefined, undefined, managers[1].access_token, store.id);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(b.headers.get("idempotent-replayed")).toBeNull();
    expect(((await a.json()) as any).id).not.toBe(((await b.json()) as any).id);
  });

  it("when no key is sent, then the same request twice makes two events", async () => {
    const events = await eventItems();
    expect((await post(null)).status).toBe(200);
    expect((await post(null)).status).toBe(200);
    expect(await eventItems()).toBe(events + 2);
  });

  it("when the API document is read, then it lists the Idempotency-Key header, the 409 and the replay header", async () => {
    const doc = await api(sys, "GET", "/openapi.json");
    const op = doc.body.paths["/stores/{store_id}/events"].post;
    expect(op.parameters).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: "Idempotency-Key",
          in: "header",
          required: false,
          schema: expect.objectContaining({ type: "string", minLength: 1, maxLength: 200 }),
        }),
      ]),
    );
    expect(op.responses["200"].headers).toHaveProperty("Idempotent-Replayed");
    expect(op.responses["409"].headers).toHaveProperty("Retry-After");
  });

  // The stores service's own sweep, reached in its process (one process only).
  (topology === "embedded" ? it : it.skip)(
    "when the stores service sweeps, then a key past its time to live is deleted and a live one stays",
    async () => {
      const keysOf = (await storeOf(sys.broker, sys.config)).collection<
        Record<string, unknown> & { _id: string }
      >("event_keys");
      const record = (id: string, expires: Date) => ({
        _id: id,
        event_id: `event-${id}`,
        lease_owner: "gone",
        lease_until: new Date(0),
        created_at: new Date(0),
        expires_at: expires,
      });
      await keysOf.insertOne(record("expired-key", new Date(Date.now() - 1000)));
      await keysOf.insertOne(record("live-key", new Date(Date.now() + 3600_000)));
      const stores = sys.broker.getLocalService("stores") as unknown as {
        retention: { sweep(): Promise<Record<string, number>> };
      };
      expect(await stores.retention.sweep()).toEqual({
        "staged uploads": 0,
        "pictures no item shows": 0,
        "expired Idempotency-Keys": 1,
      });
      expect(await keysOf.count({ _id: { $in: ["expired-key", "live-key"] } })).toBe(1);
    },
  );
});
