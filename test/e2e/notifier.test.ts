import { call } from "../../shared/contracts";
import { MulticastAccepted, NotificationJob } from "../../shared/contracts/notifier";
import { check } from "../../shared/validation";
import { TOKEN_RETRIES } from "../../services/notifier/deliver";
import { startFakeFcm, type FakeFcm } from "../support/fake-fcm";
import { api, newUser, startSystem, type System } from "../support/system";

let fcm: FakeFcm;
let sys: System;
beforeAll(async () => {
  fcm = await startFakeFcm();
  sys = await startSystem({
    env: {
      FCM_ENDPOINT: fcm.url,
      FCM_INSECURE_TLS: "true",
      FCM_PROJECT_ID: "fake-project",
      MULTICAST_MAX_RECIPIENTS: "50",
    },
  });
});
afterAll(async () => {
  await sys.stop();
  await fcm.close();
});

const key = () => sys.manifest.api_keys.notifications;
const send = (json: unknown, headers: Record<string, string> = {}, apiKey = key()) =>
  api(sys, "POST", "/notifications/send-multicast", { apiKey, json, headers });
const job = (id: string, apiKey = key()) => api(sys, "GET", `/notifications/${id}`, { apiKey });

async function untilFinished(id: string, waitMs = 20_000): Promise<NotificationJob> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const res = await job(id);
    if (res.body.status === "done" || res.body.status === "failed") return res.body;
    if (Date.now() > deadline) throw new Error(`job ${id} still ${res.body.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function userWithTokens(tokens: string[]) {
  const user = await newUser(sys.broker, "push");
  for (const token of tokens) await call(sys.broker, "users.addDevice", { user_id: user.id, token });
  return user;
}

const uniq = (prefix: string) => `${prefix}${Math.random().toString(36).slice(2, 10)}`;

describe("POST /notifications/send-multicast", () => {
  it("when a valid request arrives, then 202 {id, status queued, recipients} before anything is sent", async () => {
    fcm.delayMs = 200;
    const user = await userWithTokens([uniq("ok-")]);
    const res = await send({ title: "Hello", desc: "World", user_ids: [user.id] });
    fcm.delayMs = 0;
    expect(res.status).toBe(202);
    expect(check(MulticastAccepted, res.body)).toBe(true);
    expect(res.body).toEqual({ id: expect.stringMatching(/^job_/), status: "queued", recipients: 1 });
    expect((await untilFinished(res.body.id)).status).toBe("done");
  });

  it("when tokens answer differently, then the job ends done with exact counts, retries at the fake and dead tokens pruned", async () => {
    const t = {
      ok: uniq("ok-"),
      unreg: uniq("unreg-"),
      invalid: uniq("invalid-"),
      badmsg: uniq("badmsg-"),
      busy: uniq("busy-"),
      rate: uniq("rate-"),
    };
    const user = await userWithTokens(Object.values(t));
    const nobody = await newUser(sys.broker, "nodevice");
    const res = await send({
      title: "Sale",
      user_ids: [user.id, nobody.id, "unknown-user"],
      keys: { promo: "X1", n: 3 },
    });
    const done = await untilFinished(res.body.id);
    expect(check(NotificationJob, done)).toBe(true);
    expect(done).toEqual(
      expect.objectContaining({
        status: "done",
        recipients: 3,
        users_without_devices: 2,
        devices: 6,
        sent: 3,
        failed: 3,
        pruned: 2,
        error: null,
      }),
    );
    expect(done.finished_at).not.toBeNull();
    expect(fcm.hits.get(t.busy)).toBe(2);
    expect(fcm.hits.get(t.rate)).toBe(2);
    expect(fcm.hits.get(t.ok)).toBe(1);
    const left = await call(sys.broker, "users.deviceTokens", { user_ids: [user.id] });
    expect(left.tokens.sort()).toEqual([t.ok, t.badmsg, t.busy, t.rate].sort());
  });

  it("when a token keeps failing with 503, then it is retried up to the bound and counted as failed", async () => {
    const down = uniq("down-");
    const user = await userWithTokens([down]);
    // Each of our 1 + TOKEN_RETRIES attempts is 5 requests over about 7 s (firebase-admin's own retries
    // with its back-off), ours about 3.5 s in all: some 32 s before the token counts as failed.
    const id = (await send({ title: "x", user_ids: [user.id] })).body.id;
    const done = await untilFinished(id, 50_000);
    expect(done).toEqual(expect.objectContaining({ sent: 0, failed: 1, pruned: 0, status: "done" }));
    expect(fcm.hits.get(down)).toBe(5 * (1 + TOKEN_RETRIES));
  }, 60_000);

  it("when the same Idempotency-Key is sent twice, then the same job comes back and nothing is sent twice", async () => {
    const token = uniq("ok-");
    const user = await userWithTokens([token]);
    const body = { title: "Once", user_ids: [user.id] };
    const headers = { "Idempotency-Key": uniq("key-") };
    const first = await send(body, headers);
    const second = await send(body, headers);
    expect(second.status).toBe(202);
    expect(second.body.id).toBe(first.body.id);
    await untilFinished(first.body.id);
    const third = await send(body, headers);
    expect(third.body).toEqual({ id: first.body.id, status: "done", recipients: 1 });
    expect(fcm.hits.get(token)).toBe(1);
  });

  it("when an Idempotency-Key is reused with another body, then 409", async () => {
    const user = await userWithTokens([uniq("ok-")]);
    const headers = { "Idempotency-Key": uniq("key-") };
    await send({ title: "A", user_ids: [user.id] }, headers);
    const res = await send({ title: "B", user_ids: [user.id] }, headers);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ detail: "Idempotency-Key was already used with a different request" });
  });

  it.each([
    ["no title", { user_ids: ["u"] }, ["body", "title"], "missing"],
    ["an empty title", { title: "", user_ids: ["u"] }, ["body", "title"], "string_too_short"],
    ["no user_ids", { title: "t" }, ["body", "user_ids"], "missing"],
    ["empty user_ids", { title: "t", user_ids: [] }, ["body", "user_ids"], "too_short"],
    ["a non-string user id", { title: "t", user_ids: [42] }, ["body", "user_ids", 0], "string_type"],
    ["duplicate user ids", { title: "t", user_ids: ["a", "a"] }, ["body", "user_ids"], "value_error"],
    [
      "a picture that is not http(s)",
      { title: "t", user_ids: ["u"], picture: "ftp://x/y.png" },
      ["body", "picture"],
      "string_pattern_mismatch",
    ],
    [
      "a nested value in keys",
      { title: "t", user_ids: ["u"], keys: { a: { b: 1 } } },
      ["body", "keys", "a"],
      "string_type",
    ],
    [
      "a reserved key",
      { title: "t", user_ids: ["u"], keys: { from: "x" } },
      ["body", "keys", "from"],
      "value_error",
    ],
    [
      "more user ids than the cap",
      { title: "t", user_ids: Array.from({ length: 51 }, (_, i) => `u${i}`) },
      ["body", "user_ids"],
      "too_long",
    ],
  ])("when the body has %s, then 422 at %j", async (_label, body, loc, type) => {
    const res = await send(body);
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual(expect.arrayContaining([expect.objectContaining({ loc, type })]));
  });

  it("when title, desc and keys exceed FCM's 4 KB, then 422 names the limit", async () => {
    const keys = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`k${i}`, "v".repeat(900)]));
    const res = await send({ title: "t", desc: "d", user_ids: ["u"], keys });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      expect.objectContaining({ loc: ["body"], msg: expect.stringMatching(/FCM allows 4000/) }),
    ]);
  });

  it("when the key is missing, of the app scope, or unknown, then 401, 403, 401", async () => {
    const body = { title: "t", user_ids: ["u"] };
    expect((await api(sys, "POST", "/notifications/send-multicast", { json: body })).body).toEqual({
      detail: "Not authenticated",
    });
    const app = await send(body, {}, sys.manifest.api_keys.app);
    expect(app.status).toBe(403);
    expect((await send(body, {}, "ak.0000000000000000.nope-nope-nope-nope-nope")).status).toBe(401);
  });
});

describe("GET /notifications/{job_id}", () => {
  it("when the job does not exist, then 404", async () => {
    const res = await job("job_000000000000000000000000");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: "Notification job not found" });
  });

  it("when asked with an app key, then 403", async () => {
    expect((await job("job_000000000000000000000000", sys.manifest.api_keys.app)).status).toBe(403);
  });
});

describe("log transport", () => {
  it("when no FCM endpoint or credentials are configured, then jobs complete through the log transport", async () => {
    const offline = await startSystem();
    try {
      const alice = offline.manifest.users.alice;
      const res = await api(offline, "POST", "/notifications/send-multicast", {
        apiKey: offline.manifest.api_keys.notifications,
        json: { title: "Offline", user_ids: [alice.id] },
      });
      expect(res.status).toBe(202);
      let state: any;
      for (let i = 0; i < 100; i++) {
        state = (
          await api(offline, "GET", `/notifications/${res.body.id}`, {
            apiKey: offline.manifest.api_keys.notifications,
          })
        ).body;
        if (state.status === "done") break;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(state).toEqual(expect.objectContaining({ status: "done", devices: 2, sent: 2, failed: 0 }));
    } finally {
      await offline.stop();
    }
  });
});
