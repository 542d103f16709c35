/**
 * Multicast requests as an attacker sends them (docs/security.md), in both topologies: key names a
 * document store or a JavaScript object treats specially are stored and delivered as they came, never a
 * 500 (docs/decisions/0028); a job is read only by the API key that made it (docs/decisions/0019).
 */
import { call } from "../../shared/contracts";
import { startFakeFcm, type FakeFcm } from "../support/fake-fcm";
import { api, newUser, startSystem, type System } from "../support/system";

let fcm: FakeFcm;
let sys: System;
let otherKey: string;
beforeAll(async () => {
  fcm = await startFakeFcm();
  sys = await startSystem({
    env: { FCM_ENDPOINT: fcm.url },
  });
  // A second key of the notifications scope, as an operator would create it.
  const created = await call(sys.broker, "auth.createApiKey", {
    label: "other-sender",
    scope: "notifications",
  });
  otherKey = created.key;
}, 120_000);
afterAll(async () => {
  await sys.stop();
  await fcm.close();
});

const ownKey = () => sys.manifest.api_keys.notifications;
const send = (body: string, apiKey = ownKey(), headers: Record<string, string> = {}) =>
  api(sys, "POST", "/notifications/send-multicast", { apiKey, raw: body, headers });
const job = (id: string, apiKey = ownKey()) => api(sys, "GET", `/notifications/${id}`, { apiKey });

async function untilFinished(id: string): Promise<{ status: string }> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const res = await job(id);
    if (res.body.status === "done" || res.body.status === "failed") return res.body;
    if (Date.now() > deadline) throw new Error(`job ${id} still ${res.body.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function userWithToken(token: string) {
  const user = await newUser(sys.broker, "sec-push");
  await call(sys.broker, "users.addDevice", { user_id: user.id, token });
  return user;
}

const uniq = (prefix: string) => `${prefix}${Math.random().toString(36).slice(2, 10)}`;

/** Names each engine or object treats specially, written as JSON text (so `__proto__` is an entry). */
const HOSTILE_KEYS =
  '{"a.b":"1","$set":"2","x$y":"3","$":"4",".":"5","__proto__":"6","constructor":"7","prototype":"8",' +
  '"hasOwnProperty":"9","toString":"10"}';

describe("multicast keys whose names a store or an object treats specially", () => {
  it("when multicast keys have names with . $ __proto__ constructor, then they are stored intact and delivered under every name, never 500", async () => {
    const token = uniq("ok-");
    const user = await userWithToken(token);
    const res = await send(`{"title":"t","user_ids":["${user.id}"],"keys":${HOSTILE_KEYS}}`);
    expect(res.status).toBe(202);
    expect((await untilFinished(res.body.id)).status).toBe("done");
    expect(fcm.data.get(token)).toBe(HOSTILE_KEYS);
  });

  it.each(["a.b", "$x", "__proto__", "constructor", "prototype"])(
    "when the only key is named %j, then 202, never 500",
    async (name) => {
      const res = await send(`{"title":"t","user_ids":["nobody"],"keys":{${JSON.stringify(name)}:"v"}}`);
      expect(res.status).toBe(202);
      expect(res.body).toEqual({ id: expect.stringMatching(/^job_/), status: "queued", recipients: 1 });
    },
  );

  it("when a key named __proto__ holds an object, then 422 at its name (values are scalars), never 500", async () => {
    const res = await send('{"title":"t","user_ids":["nobody"],"keys":{"__proto__":{"polluted":"1"}}}');
    expect(res.status).toBe(422);
    expect(res.body.detail[0]).toEqual(expect.objectContaining({ loc: ["body", "keys", "__proto__"] }));
    // The echo keeps the name as an entry (the answer's text, as jest would print a copy of it).
    expect(res.text).toContain('"input":{"__proto__":{"polluted":"1"}}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("who may read a multicast job", () => {
  it("when another notifications key reads a job, then 404 with the body of an unknown job", async () => {
    const made = await send('{"title":"t","user_ids":["nobody"]}');
    expect(made.status).toBe(202);
    expect((await job(made.body.id)).status).toBe(200);
    const unknown = await job("job_000000000000000000000000", otherKey);
    const other = await job(made.body.id, otherKey);
    expect(other.status).toBe(404);
    expect(other.body).toEqual(unknown.body);
    expect(other.body).toEqual({ detail: "Notification job not found" });
  });

  it("when another key sends the same Idempotency-Key, then it gets a job of its own and never the first key's", async () => {
    const headers = { "Idempotency-Key": uniq("shared-") };
    const body = '{"title":"t","user_ids":["nobody"]}';
    const first = await send(body, ownKey(), headers);
    const second = await send(body, otherKey, headers);
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    expect(second.body.id).not.toBe(first.body.id);
    // Another body under the same Idempotency-Key is no conflict across keys either.
    const third = await send('{"title":"other","user_ids":["nobody"]}', otherKey, {
      "Idempotency-Key": uniq("shared-"),
    });
    expect(third.status).toBe(202);
    expect((await job(second.body.id, ownKey())).status).toBe(404);
    expect((await job(second.body.id, otherKey)).status).toBe(200);
  });
});
