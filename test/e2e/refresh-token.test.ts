import { signingKeysOf } from "../../shared/auth/jwk";
import { newSigningKeyPem } from "../support/token-keys";
import { signAccessToken, signingKeyOf } from "../support/tokens";
import { TokenSet } from "../../shared/contracts/auth";
import { check } from "../../shared/validation";
import { call } from "../../shared/contracts";
import { GRACE_SECONDS } from "../../services/auth/refresh-family";
import { storeOf } from "../../shared/storage";
import { api, newUser, startSystem, topology, type System } from "../support/system";

let sys: System;
beforeAll(async () => {
  sys = await startSystem();
});
afterAll(() => sys.stop());

const refresh = (accessToken: string | undefined, body: unknown) =>
  api(sys, "POST", "/auth/refresh-token", { token: accessToken, json: body });

describe("POST /auth/refresh-token", () => {
  it("when a valid refresh token is sent with the user's access token, then 200 with a new token set", async () => {
    const user = await newUser(sys.broker);
    const before = Math.floor(Date.now() / 1000);
    const res = await refresh(user.access_token, { refresh_token: user.refresh_token });
    expect(res.status).toBe(200);
    expect(check(TokenSet, res.body)).toBe(true);
    expect(res.body.token_type).toBe("Bearer");
    expect(res.body.refresh_token).not.toBe(user.refresh_token);
    expect(res.body.expires_at).toBeGreaterThanOrEqual(before + sys.config.accessTokenTtlSeconds);
    expect(res.body.expires_at).toBeLessThanOrEqual(before + sys.config.accessTokenTtlSeconds + 5);
    expect(res.body.refresh_token_expires_at).toBeGreaterThanOrEqual(
      before + sys.config.refreshTokenTtlSeconds,
    );
    const round = await api(sys, "GET", `/rounds/${sys.manifest.rounds.open}`, {
      token: res.body.access_token,
    });
    expect(round.status).toBe(200);
  });

  it("when the access token has expired but its signature is valid, then the refresh still works", async () => {
    const user = await newUser(sys.broker);
    const past = Math.floor(Date.now() / 1000) - 7200;
    const expired = signAccessToken(sys, { sub: user.id, jti: "old", iat: past, exp: past + 900 });
    expect((await api(sys, "GET", `/rounds/${sys.manifest.rounds.open}`, { token: expired })).status).toBe(
      401,
    );
    const res = await refresh(expired, { refresh_token: user.refresh_token });
    expect(res.status).toBe(200);
  });

  it("when no Authorization header is sent, then 401 Not authenticated", async () => {
    const res = await refresh(undefined, { refresh_token: "x" });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "Not authenticated" });
  });

  it("when the access token's signature is bad, then 401 Token invalid", async () => {
    const user = await newUser(sys.broker);
    const [other] = signingKeysOf(newSigningKeyPem(), "JWT_PRIVATE_KEYS");
    const forged = signAccessToken(
      sys,
      { sub: user.id, jti: "x" },
      { key: other.privateKey, kid: signingKeyOf(sys).kid },
    );
    const res = await refresh(forged, { refresh_token: user.refresh_token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "Token invalid: invalid signature" });
  });

  it("when the user was removed, then 401 User removed", async () => {
    const { removed } = sys.manifest.users;
    const res = await refresh(removed.access_token, { refresh_token: removed.refresh_token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "User removed" });
  });

  it("when a user the gateway has vouched for is removed, then their next refresh is 401 User removed, even with a bad body", async () => {
    const user = await newUser(sys.broker, "leaving-refresher");
    const first = await refresh(user.access_token, { refresh_token: user.refresh_token });
    expect(first.status).toBe(200);
    await call(sys.broker, "users.remove", { id: user.id });
    await sys.settle();

    const res = await refresh(first.body.access_token, { refresh_token: first.body.refresh_token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "User removed" });
    const badBody = await refresh(first.body.access_token, { refresh_token: 42 });
    expect(badBody.status).toBe(401);
    expect(badBody.body).toEqual({ detail: "User removed" });
  });

  it("when refresh_token is missing, then 422 missing at body.refresh_token", async () => {
    const res = await refresh(sys.manifest.users.alice.access_token, {});
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [{ type: "missing", loc: ["body", "refresh_token"], msg: "Field required", input: {} }],
    });
  });

  it("when refresh_token is not a string, then 422 string_type", async () => {
    const res = await refresh(sys.manifest.users.alice.access_token, { refresh_token: 42 });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      {
        type: "string_type",
        loc: ["body", "refresh_token"],
        msg: "Input should be a valid string",
        input: 42,
      },
    ]);
  });

  it("when the refresh token is unknown, then 401 Token invalid", async () => {
    const res = await refresh(sys.manifest.users.alice.access_token, { refresh_token: "no-such-token" });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "Token invalid: refresh token unknown" });
  });

  it("when the refresh token belongs to another user, then 401 and the token keeps working for its owner", async () => {
    const owner = await newUser(sys.broker);
    const other = await newUser(sys.broker);
    const res = await refresh(other.access_token, { refresh_token: owner.refresh_token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "Token invalid: refresh token belongs to another user" });
    expect((await refresh(owner.access_token, { refresh_token: owner.refresh_token })).status).toBe(200);
  });

  it("when a user is removed, then their refresh tokens are revoked", async () => {
    const user = await newUser(sys.broker);
    await call(sys.broker, "users.remove", { id: user.id });
    await sys.settle();
    const store = await sys.inspect("auth");
    const docs = await store
      .collection<{ _id: string; user_id: string; revoked_at: Date | null }>("refresh_families")
      .find({ user_id: user.id });
    expect(docs.length).toBeGreaterThan(0);
    docs.forEach((d) => expect(d.revoked_at).not.toBeNull());
  });

  it("when a token is refreshed five times, then its sign-in is still one document in the store", async () => {
    const user = await newUser(sys.broker);
    let current = user.refresh_token;
    for (let i = 0; i < 5; i++) {
      const res = await refresh(user.access_token, { refresh_token: current });
      expect(res.status).toBe(200);
      current = res.body.refresh_token;
    }
    const store = await sys.inspect("auth");
    expect(await store.collection("refresh_families").count({ user_id: user.id })).toBe(1);
    expect(await store.collection("refresh_tokens").count({ user_id: user.id })).toBe(0);
  });
});

describe("rotation and reuse detection", () => {
  it("when a token is refreshed three times and the first is presented again, then the family is revoked", async () => {
    const user = await newUser(sys.broker);
    const first = user.refresh_token;
    let current = first;
    const sets: any[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await refresh(user.access_token, { refresh_token: current });
      expect(res.status).toBe(200);
      sets.push(res.body);
      current = res.body.refresh_token;
    }
    const replay = await refresh(user.access_token, { refresh_token: first });
    expect(replay.status).toBe(401);
    expect(replay.body).toEqual({ detail: "Token invalid: refresh token reused" });
    const newest = await refresh(user.access_token, { refresh_token: current });
    expect(newest.status).toBe(401);
    expect(newest.body).toEqual({ detail: "Token invalid: refresh token revoked" });
  });

  it("when the response of a refresh was lost, then the previous token works once more within the grace window", async () => {
    const user = await newUser(sys.broker);
    const lost = await refresh(user.access_token, { refresh_token: user.refresh_token });
    expect(lost.status).toBe(200);
    const retry = await refresh(user.access_token, { refresh_token: user.refresh_token });
    expect(retry.status).toBe(200);
    expect(retry.body.refresh_token).not.toBe(lost.body.refresh_token);
    // The successor the client never received is revoked; the retried one works.
    expect((await refresh(user.access_token, { refresh_token: lost.body.refresh_token })).status).toBe(401);
    const next = await refresh(user.access_token, { refresh_token: retry.body.refresh_token });
    expect(next.status).toBe(200);
  });

  it("when the previous token is presented a second time within the window, then it is a reuse", async () => {
    const user = await newUser(sys.broker);
    await refresh(user.access_token, { refresh_token: user.refresh_token });
    expect((await refresh(user.access_token, { refresh_token: user.refresh_token })).status).toBe(200);
    const third = await refresh(user.access_token, { refresh_token: user.refresh_token });
    expect(third.status).toBe(401);
    expect(third.body).toEqual({ detail: "Token invalid: refresh token reused" });
  });

  // The window (GRACE_SECONDS, 30 s) is made to have passed by dating the rotation back in auth's own
  // store, which only the embedded topology reaches; the rule itself is unit-tested on a fake clock
  // (test/unit/services/auth/refresh.test.ts).
  (topology === "embedded" ? it : it.skip)(
    "when the grace window is over, then presenting the previous token revokes the family",
    async () => {
      const user = await newUser(sys.broker);
      const r1 = await refresh(user.access_token, { refresh_token: user.refresh_token });
      expect(r1.status).toBe(200);
      const families = (await storeOf(sys.broker, sys.config)).collection<{ _id: string }>(
        "refresh_families",
      );
      const past = new Date(Date.now() - (GRACE_SECONDS + 1) * 1000);
      expect(await families.updateMany({ user_id: user.id }, { $set: { rotated_at: past } })).toBe(1);
      const late = await refresh(user.access_token, { refresh_token: user.refresh_token });
      expect(late.status).toBe(401);
      expect(late.body).toEqual({ detail: "Token invalid: refresh token reused" });
      const successor = await refresh(user.access_token, { refresh_token: r1.body.refresh_token });
      expect(successor.status).toBe(401);
    },
  );
});

describe("stored secrets", () => {
  it("when the store is read directly, then no refresh token or API key appears in plain text", async () => {
    const store = await sys.inspect("auth");
    const tokens = JSON.stringify(await store.collection<{ _id: string }>("refresh_families").find({}));
    const keys = JSON.stringify(await store.collection<{ _id: string }>("api_keys").find({}));
    const { users, api_keys } = sys.manifest;
    for (const u of [users.alice, users.bob, users.carol, ...users.crowd]) {
      expect(tokens).not.toContain(u.refresh_token);
    }
    expect(tokens.length).toBeGreaterThan(100);
    for (const key of [api_keys.app, api_keys.notifications]) {
      expect(keys).not.toContain(key);
      expect(keys).not.toContain(key.split(".")[2]);
    }
    expect(keys.length).toBeGreaterThan(50);
  });
});
