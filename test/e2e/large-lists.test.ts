/**
 * Lists that grow with their input, at their documented limits, with the default configuration (and, in
 * the cluster project, a nats-server with its default 1 MB `max_payload`): a multicast to 100,000 users
 * delivered to every device, one to the 1,000,000-id ceiling accepted and finished, a retried paged
 * multicast made once, and a friends list larger than a packet answered whole. Nothing crosses the
 * transporter in one packet larger than a page (docs/decisions/0032-job-queue.md).
 */
import { call } from "../../shared/contracts";
import { MAX_RECIPIENTS_CEILING, RECIPIENT_PAGE_MAX } from "../../shared/contracts/notifier";
import { pagesOf, PAGE_BYTES } from "../../shared/contracts/paging";
import type { NotificationJob } from "../../shared/contracts/notifier";
import type { RecipientPageDoc } from "../../services/notifier/jobs.repository";
import { startFakeFcm, type FakeFcm } from "../support/fake-fcm";
import { api, newUser, startSystem, type System } from "../support/system";

const RUN = `${process.pid}${Math.random().toString(36).slice(2, 6)}`;

let fcm: FakeFcm;
let sys: System;
beforeAll(async () => {
  fcm = await startFakeFcm();
  sys = await startSystem({
    env: {
      FCM_ENDPOINT: fcm.url,
      // The ceiling, so one system takes both the default cap's 100,000 and the ceiling's 1,000,000.
      MULTICAST_MAX_RECIPIENTS: String(MAX_RECIPIENTS_CEILING),
    },
  });
}, 120_000);
afterAll(async () => {
  await sys?.stop();
  await fcm?.close();
});

const key = () => sys.manifest.api_keys.notifications;
const send = (json: unknown, headers: Record<string, string> = {}) =>
  api(sys, "POST", "/notifications/send-multicast", { apiKey: key(), json, headers });

async function untilFinished(id: string, timeoutMs: number): Promise<NotificationJob> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api<NotificationJob>(sys, "GET", `/notifications/${id}`, { apiKey: key() });
    if (res.body.status === "done" || res.body.status === "failed") return res.body;
    if (Date.now() > deadline) throw new Error(`job ${id} still ${res.body.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The recipient pages the notifier stored for a job (its set's pages, header excluded). */
async function storedPages(jobId: string): Promise<RecipientPageDoc[]> {
  const all = await (
    await sys.inspect("notifier")
  )
    .collection<RecipientPageDoc>("notification_recipients")
    .find({ index: { $gte: 0 } });
  return all.filter((p) => p.set_id.startsWith(`${jobId}.`));
}

describe("a multicast at its limits", () => {
  it("when a multicast names 100,000 users with a device each, then it is accepted and every device is sent to exactly once", async () => {
    const n = 100_000;
    const userIds = Array.from({ length: n }, (_, i) => `big-${RUN}-${i}`);
    const devices = userIds.map((u, i) => ({ user_id: u, token: `ok-${RUN}-${i}` }));
    for (const page of pagesOf(devices, 10_000))
      await call(sys.broker, "users.importDevices", { devices: page });
    const sentBefore = fcm.delivered.length;

    const res = await send({ title: "Everyone", desc: "A big one", user_ids: userIds });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ id: expect.stringMatching(/^job_/), status: "queued", recipients: n });

    const pages = await storedPages(res.body.id);
    expect(pages.length).toBeGreaterThan(1);
    expect(pages.reduce((sum, p) => sum + p.user_ids.length, 0)).toBe(n);
    for (const p of pages) {
      expect(p.user_ids.length).toBeLessThanOrEqual(RECIPIENT_PAGE_MAX);
      expect(Buffer.byteLength(JSON.stringify(p.user_ids))).toBeLessThanOrEqual(PAGE_BYTES);
    }

    const done = await untilFinished(res.body.id, 400_000);
    expect(done).toEqual(
      expect.objectContaining({
        status: "done",
        recipients: n,
        users_without_devices: 0,
        devices: n,
        sent: n,
        failed: 0,
      }),
    );
    const delivered = fcm.delivered.slice(sentBefore).filter((t) => t.startsWith(`ok-${RUN}-`));
    expect(delivered).toHaveLength(n);
    expect(new Set(delivered).size).toBe(n);
  }, 600_000);

  it("when a multicast names 1,000,000 users (the ceiling), then it is accepted and finishes, none of them having a device", async () => {
    const userIds = Array.from({ length: MAX_RECIPIENTS_CEILING }, (_, i) => `c${RUN}-${i}`);
    const res = await send({ title: "The ceiling", user_ids: userIds });
    expect(res.status).toBe(202);
    expect(res.body.recipients).toBe(MAX_RECIPIENTS_CEILING);
    const done = await untilFinished(res.body.id, 400_000);
    expect(done).toEqual(
      expect.objectContaining({
        status: "done",
        recipients: MAX_RECIPIENTS_CEILING,
        users_without_devices: MAX_RECIPIENTS_CEILING,
        devices: 0,
      }),
    );
  }, 600_000);

  it("when a paged multicast is retried with its Idempotency-Key, then the first job answers, and a changed list is 409", async () => {
    const userIds = Array.from({ length: 3 * RECIPIENT_PAGE_MAX + 1 }, (_, i) => `r${RUN}-${i}`);
    const headers = { "Idempotency-Key": `paged-${RUN}` };
    const first = await send({ title: "Once", user_ids: userIds }, headers);
    const second = await send({ title: "Once", user_ids: userIds }, headers);
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    expect(second.body.id).toBe(first.body.id);
    const changed = await send({ title: "Once", user_ids: [...userIds.slice(1), `r${RUN}-x`] }, headers);
    expect(changed.status).toBe(409);
    // Only the first request's list is kept.
    expect((await storedPages(first.body.id)).reduce((sum, p) => sum + p.user_ids.length, 0)).toBe(
      userIds.length,
    );
  });

  it("when a long list repeats an id across its pages, then 422 names user_ids and no job is made", async () => {
    const userIds = Array.from({ length: RECIPIENT_PAGE_MAX + 10 }, (_, i) => `d${RUN}-${i}`);
    userIds.push(userIds[0]);
    const res = await send({ title: "Twice", user_ids: userIds });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([expect.objectContaining({ loc: ["body", "user_ids"] })]);
  });
});

describe("a friends list larger than a packet", () => {
  it("when a user has 600 friends with long avatar URLs (over 1 MB of JSON), then GET /users/friends answers all of them", async () => {
    const me = await newUser(sys.broker, "popular");
    const avatar = `https://cdn.example/${"a".repeat(1900)}.png`;
    const friends: string[] = [];
    for (let i = 0; i < 600; i++) {
      const profile = await call(sys.broker, "users.create", {
        phone: `+7${RUN.slice(-4)}${String(i).padStart(6, "0")}`,
        username: `friend_${RUN}_${i}`,
        first_name: `F${String(i).padStart(4, "0")}`,
        avatar_url: avatar,
      });
      await call(sys.broker, "users.addFriends", { a: me.id, b: profile.id });
      friends.push(profile.id);
    }
    const res = await api(sys, "GET", "/users/friends", { token: me.access_token });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(Buffer.byteLength(res.text)).toBeGreaterThan(1024 * 1024);
    // A streamed answer carries the route's headers as any other (decision 0037).
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.body.map((f: { id: string }) => f.id).sort()).toEqual(friends.sort());
    expect(res.body[0]).toEqual(expect.objectContaining({ first_name: "F0000", avatar_url: avatar }));
  }, 120_000);
});

describe("a round with many participants", () => {
  it("when a round has 300 participants with long avatar URLs (profiles in two pages, an answer over 256 KiB), then reading and joining it answer every participant", async () => {
    const avatar = `https://cdn.example/${"p".repeat(1000)}.png`;
    const members: string[] = [];
    for (let i = 0; i < 300; i++) {
      const profile = await call(sys.broker, "users.create", {
        phone: `+8${RUN.slice(-4)}${String(i).padStart(6, "0")}`,
        username: `member_${RUN}_${i}`,
        first_name: `M${i}`,
        avatar_url: avatar,
      });
      members.push(profile.id);
    }
    const { alice, bob } = sys.manifest.users;
    const open = await api(sys, "GET", `/rounds/${sys.manifest.rounds.open}`, { token: alice.access_token });
    const created = await call(sys.broker, "rounds.create", {
      owner_id: alice.id,
      item_id: open.body.item.id,
      entry_fee: "0",
      max_members_count: 400,
      is_active: true,
      is_private: false,
      is_ended: false,
      is_event: false,
      start_time: null,
      end_time: new Date(Date.now() + 3_600_000).toISOString(),
      question: { theme: "Music", emoji: null, category: "Culture" },
      certificate: { text: "Ten percent off", discount_percent: 10 },
      locations: [],
      member_ids: members,
      favorite_of: [],
    });
    const read = await api(sys, "GET", `/rounds/${created.id}`, { token: bob.access_token });
    expect(read.status).toBe(200);
    expect(Buffer.byteLength(read.text)).toBeGreaterThan(PAGE_BYTES);
    expect(read.body.participant_statuses.map((p: { user: { id: string } }) => p.user.id).sort()).toEqual(
      [...members].sort(),
    );
    const joined = await api(sys, "POST", `/rounds/${created.id}/join`, {
      token: bob.access_token,
      json: { attributes: [] },
    });
    expect(joined.status).toBe(200);
    expect(joined.body.members_count).toBe(301);
    expect(joined.body.participant_statuses).toHaveLength(301);
  }, 120_000);
});
