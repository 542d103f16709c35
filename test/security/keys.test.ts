/**
 * The token keys as an attacker or auditor meets them (docs/decisions/0132), in both topologies:
 * no published secret signs, the public keys are published and nothing else, and a refresh is refused
 * with an access token that expired too long ago.
 */
import jwt from "jsonwebtoken";
import { JWT_ISSUER } from "../../shared/auth/access-token";
import { publicKeyOfJwk } from "../../shared/auth/jwk";
import { PUBLISHED_SECRETS } from "../../shared/config/key-checks";
import { api, newUser, startSystem, type System } from "../support/system";
import { signAccessToken } from "../support/tokens";

const MAX_AGE = 600;
let sys: System;
beforeAll(async () => {
  sys = await startSystem({ env: { REFRESH_TOKEN_TTL: String(MAX_AGE) } });
}, 120_000);
afterAll(() => sys.stop());

describe("no published key signs a token", () => {
  it("when a token is forged with the old published development secret (or any secret of the repository), then 401", async () => {
    expect(PUBLISHED_SECRETS).toContain("dev-only-secret-change-me-0123456789abcdef");
    for (const secret of PUBLISHED_SECRETS) {
      const forged = signAccessToken(
        sys,
        { sub: sys.manifest.users.alice.id },
        { key: secret, algorithm: "HS256" },
      );
      const res = await api(sys, "GET", "/users/friends", { token: forged });
      expect({ secret, status: res.status, body: res.body }).toEqual({
        secret,
        status: 401,
        body: { detail: "Token invalid: invalid algorithm" },
      });
    }
  });
});

describe("GET /.well-known/jwks.json", () => {
  it("when it is read without credentials, then it lists the public keys, each with its thumbprint as kid and no private member, cacheable for 5 minutes", async () => {
    const res = await api<{ keys: Record<string, unknown>[] }>(sys, "GET", "/.well-known/jwks.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("public, max-age=300");
    expect(res.body.keys.length).toBeGreaterThanOrEqual(1);
    for (const key of res.body.keys) {
      expect(Object.keys(key).sort()).toEqual(["alg", "crv", "kid", "kty", "use", "x", "y"]);
      expect(key).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });
      // The kid is the key's own RFC 7638 thumbprint.
      expect(publicKeyOfJwk(key)?.kid).toBe(key.kid);
    }
    const { header } = jwt.decode(sys.manifest.users.alice.access_token, { complete: true })!;
    expect(header.alg).toBe("ES256");
    expect(res.body.keys.map((k) => k.kid)).toContain(header.kid);
  });

  it("when a token is verified with the published key alone (another backend would), then it verifies", async () => {
    const res = await api<{ keys: Record<string, unknown>[] }>(sys, "GET", "/.well-known/jwks.json");
    const token = sys.manifest.users.bob.access_token;
    const kid = jwt.decode(token, { complete: true })!.header.kid;
    const key = publicKeyOfJwk(res.body.keys.find((k) => k.kid === kid))!.key;
    expect(jwt.verify(token, key, { algorithms: ["ES256"], issuer: JWT_ISSUER })).toMatchObject({
      sub: sys.manifest.users.bob.id,
    });
  });
});

describe("the refresh bound (REFRESH_TOKEN_TTL)", () => {
  it("when a refresh presents an access token expired longer ago than the bound, then 401 saying so; within it, 200", async () => {
    const user = await newUser(sys.broker, "late");
    const now = Math.floor(Date.now() / 1000);
    const tooOld = signAccessToken(sys, {
      sub: user.id,
      iat: now - MAX_AGE - 1000,
      exp: now - MAX_AGE - 100,
    });
    const refused = await api(sys, "POST", "/auth/refresh-token", {
      token: tooOld,
      json: { refresh_token: user.refresh_token },
    });
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({
      detail: `Token invalid: jwt expired more than REFRESH_TOKEN_TTL (${MAX_AGE} s) ago, too long to refresh`,
    });

    const recent = signAccessToken(sys, { sub: user.id, iat: now - MAX_AGE, exp: now - MAX_AGE + 100 });
    const accepted = await api(sys, "POST", "/auth/refresh-token", {
      token: recent,
      json: { refresh_token: user.refresh_token },
    });
    expect(accepted.status).toBe(200);
  });
});
