import { signingKeysOf } from "../../shared/auth/jwk";
import { newSigningKeyPem } from "../support/token-keys";
import { signAccessToken, signingKeyOf } from "../support/tokens";
import { call } from "../../shared/contracts";
import { api, newUser, startSystem, topology, type System } from "../support/system";

let sys: System;
beforeAll(async () => {
  sys = await startSystem();
});
afterAll(() => sys.stop());

const roundPath = () => `/rounds/${sys.manifest.rounds.open}`;

describe("bearer authentication (spec §5, §7)", () => {
  it("when no Authorization header is sent, then 401 Not authenticated with WWW-Authenticate: Bearer", async () => {
    const res = await api(sys, "GET", roundPath());
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "Not authenticated" });
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
  });

  it("when the scheme is not Bearer, then 401 Not authenticated", async () => {
    const res = await api(sys, "GET", roundPath(), {
      headers: { authorization: `Basic ${sys.manifest.users.alice.access_token}` },
    });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "Not authenticated" });
  });

  it("when the bearer token is empty, then 401 Not authenticated", async () => {
    const res = await api(sys, "GET", roundPath(), { headers: { authorization: "Bearer " } });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "Not authenticated" });
  });

  it("when the token is expired, then 401 Token invalid: jwt expired", async () => {
    const past = Math.floor(Date.now() / 1000) - 3600;
    const token = signAccessToken(sys, {
      sub: sys.manifest.users.alice.id,
      jti: "t1",
      iat: past - 60,
      exp: past,
    });
    const res = await api(sys, "GET", roundPath(), { token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "Token invalid: jwt expired" });
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
  });

  it("when the signature does not match, then 401 Token invalid: invalid signature", async () => {
    // Signed with another key under the kid of the system's own.
    const [other] = signingKeysOf(newSigningKeyPem(), "JWT_PRIVATE_KEYS");
    const token = signAccessToken(
      sys,
      { sub: sys.manifest.users.alice.id, jti: "t2" },
      { key: other.privateKey, kid: signingKeyOf(sys).kid },
    );
    const res = await api(sys, "GET", roundPath(), { token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "Token invalid: invalid signature" });
  });

  it("when the token is not a JWT, then 401 Token invalid: jwt malformed", async () => {
    const res = await api(sys, "GET", roundPath(), { token: "not-a-token" });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "Token invalid: jwt malformed" });
  });

  it("when the token uses another algorithm than the pinned one, then 401 Token invalid", async () => {
    const token = signAccessToken(
      sys,
      { sub: sys.manifest.users.alice.id, jti: "t3" },
      { key: "a-secret-some-deployment-once-had-0123456789", algorithm: "HS512" },
    );
    const res = await api(sys, "GET", roundPath(), { token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "Token invalid: invalid algorithm" });
  });

  it("when the token is absurdly long, then 401 Token invalid rather than a validation error", async () => {
    const res = await api(sys, "GET", roundPath(), { token: "a".repeat(10_000) });
    expect(res.status).toBe(401);
    expect((res.body as any).detail).toMatch(/^Token invalid: /);
  });

  it("when the token's user was removed, then 401 User removed", async () => {
    const res = await api(sys, "GET", roundPath(), { token: sys.manifest.users.removed.access_token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "User removed" });
  });

  it("when a user whose token the gateway has already verified is removed, then the next request is 401 User removed", async () => {
    const user = await newUser(sys.broker, "leaving");
    expect((await api(sys, "GET", roundPath(), { token: user.access_token })).status).toBe(200);
    await call(sys.broker, "users.remove", { id: user.id });
    await sys.settle();
    const res = await api(sys, "GET", roundPath(), { token: user.access_token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "User removed" });
  });

  // A `user.removed` sent while a process was cut off from the transporter never reaches it; what the
  // gateway remembered is forgotten when it connects again. One process has no transporter to lose, so
  // the connection's event is raised here by hand, as Moleculer raises it on every (re)connection.
  (topology === "embedded" ? it.each : it.skip.each)([["$transporter.connected", { wasReconnect: true }]])(
    "when the gateway's connection comes back (%s), then it forgets every token and user it had verified",
    async (event, payload) => {
      const user = await newUser(sys.broker, "reconnecting");
      expect((await api(sys, "GET", roundPath(), { token: user.access_token })).status).toBe(200);
      const gateway = sys.broker.getLocalService("gateway") as unknown as {
        tokens: { size: number };
        activeUsers: { size: number };
      };
      expect(gateway.tokens.size).toBeGreaterThan(0);
      sys.broker.broadcastLocal(event, payload);
      expect(gateway.tokens.size).toBe(0);
      expect(gateway.activeUsers.size).toBe(0);
      expect((await api(sys, "GET", roundPath(), { token: user.access_token })).status).toBe(200);
    },
  );

  it("when an unauthenticated join carries a malformed body, then 401 comes before 422", async () => {
    const res = await api(sys, "POST", `${roundPath()}/join`, { raw: "{not json" });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "Not authenticated" });
  });

  it("when a join with an invalid token carries a bad body, then 401 Token invalid", async () => {
    const res = await api(sys, "POST", `${roundPath()}/join`, {
      token: "x.y.z",
      json: { attributes: "nope" },
    });
    expect(res.status).toBe(401);
    expect((res.body as any).detail).toMatch(/^Token invalid: /);
  });
});
