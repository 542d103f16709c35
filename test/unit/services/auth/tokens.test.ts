import { randomBytes } from "node:crypto";
import jwt from "jsonwebtoken";
import {
  hashToken,
  newRefreshToken,
  signAccessToken,
  verifyAccessToken,
} from "../../../../services/auth/tokens";
import { JWT_ISSUER, legacyKeyOf, type VerificationKeys } from "../../../../shared/auth/access-token";
import { signingKeysOf } from "../../../../shared/auth/jwk";
import { ErrorType, TokenInvalidError } from "../../../../shared/errors";
import { newSigningKeyPem } from "../../../support/token-keys";

const config = {
  accessTokenTtlSeconds: 900,
  refreshTokenTtlSeconds: 7200,
} as const;
const [key] = signingKeysOf(newSigningKeyPem(), "JWT_PRIVATE_KEYS");
const [other] = signingKeysOf(newSigningKeyPem(), "JWT_PRIVATE_KEYS");
const LEGACY_SECRET = randomBytes(24).toString("hex");
const keys: VerificationKeys = { byKid: new Map([[key.kid, key.publicKey]]), legacy: [] };
const withLegacy: VerificationKeys = { ...keys, legacy: [legacyKeyOf(`${LEGACY_SECRET}-legacy`)] };

const nowSeconds = () => Math.floor(Date.now() / 1000);

function refusal(token: string, held: VerificationKeys = keys, opts: { refresh?: boolean } = {}) {
  try {
    verifyAccessToken(token, held, config, opts);
  } catch (err) {
    expect(err).toBeInstanceOf(TokenInvalidError);
    expect(err).toMatchObject({ code: 401, type: ErrorType.TOKEN_INVALID });
    return (err as Error).message;
  }
  throw new Error("expected the token to be refused");
}

const es256 = (payload: object, opts: jwt.SignOptions = {}) =>
  jwt.sign(payload, key.privateKey, {
    algorithm: "ES256",
    keyid: key.kid,
    issuer: JWT_ISSUER,
    ...opts,
  });

describe("signAccessToken and verifyAccessToken", () => {
  it("when a fresh token is verified, then its claims come back", () => {
    const now = nowSeconds();
    const { token, jti, exp } = signAccessToken("user-1", key, config, now);
    expect(exp).toBe(now + 900);
    expect(verifyAccessToken(token, keys, config)).toEqual({ sub: "user-1", jti, exp, iat: now });
  });

  it("when two tokens are signed, then each has its own jti", () => {
    const now = nowSeconds();
    expect(signAccessToken("u", key, config, now).jti).not.toBe(signAccessToken("u", key, config, now).jti);
  });

  it("when the token is signed, then it is ES256 with the key's thumbprint as kid, and the issuer", () => {
    const { token } = signAccessToken("user-1", key, config, nowSeconds());
    const decoded = jwt.decode(token, { complete: true });
    expect(decoded?.header).toEqual({ alg: "ES256", typ: "JWT", kid: key.kid });
    expect(key.kid).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(decoded?.payload).toMatchObject({ iss: "rounds-platform", sub: "user-1" });
  });

  it("when the token has expired, then it is 'Token invalid: jwt expired'", () => {
    const { token } = signAccessToken("user-1", key, config, nowSeconds() - 3600);
    expect(refusal(token)).toBe("Token invalid: jwt expired");
  });

  it("when an expired token is presented to refresh within the bound, then its claims come back", () => {
    const { token } = signAccessToken("user-1", key, config, nowSeconds() - 3600);
    expect(verifyAccessToken(token, keys, config, { refresh: true }).sub).toBe("user-1");
  });

  it("when a token expired longer ago than REFRESH_TOKEN_TTL is presented to refresh, then it is refused with why", () => {
    const { token } = signAccessToken("user-1", key, config, nowSeconds() - 900 - 7200 - 5);
    expect(refusal(token, keys, { refresh: true })).toBe(
      "Token invalid: jwt expired more than REFRESH_TOKEN_TTL (7200 s) ago, too long to refresh",
    );
  });

  it("when the token was signed with another key under a known kid, then it is 'Token invalid: invalid signature'", () => {
    const forged = jwt.sign({ sub: "user-1", jti: "j" }, other.privateKey, {
      algorithm: "ES256",
      keyid: key.kid,
      issuer: JWT_ISSUER,
    });
    expect(refusal(forged)).toBe("Token invalid: invalid signature");
  });

  it("when the token names a kid auth does not hold, then it is 'Token invalid: invalid signature'", () => {
    const { token } = signAccessToken("user-1", other, config, nowSeconds());
    expect(refusal(token)).toBe("Token invalid: invalid signature");
  });

  it("when the token is garbage, then it is 'Token invalid: jwt malformed'", () => {
    expect(refusal("not-a-jwt")).toBe("Token invalid: jwt malformed");
  });

  it("when the token uses the 'none' algorithm, then it is refused", () => {
    const unsigned = jwt.sign({ sub: "user-1", jti: "j" }, null, {
      algorithm: "none",
      issuer: JWT_ISSUER,
    });
    expect(unsigned.split(".")[2]).toBe("");
    expect(refusal(unsigned)).toBe("Token invalid: jwt signature is required");
  });

  it("when the token is HMAC-signed and no legacy secret is held, then it is 'invalid algorithm'", () => {
    for (const algorithm of ["HS256", "HS512"] as const) {
      const token = jwt.sign({ sub: "user-1", jti: "j" }, `${LEGACY_SECRET}-legacy`, {
        algorithm,
        issuer: JWT_ISSUER,
      });
      expect(refusal(token)).toBe("Token invalid: invalid algorithm");
    }
  });

  it("when an HS256 token of before ES256 is verified with its legacy secret, then its claims come back, even expired on a refresh", () => {
    const past = nowSeconds() - 3600;
    const token = jwt.sign(
      { sub: "user-1", jti: "j", iat: past, exp: past + 900 },
      `${LEGACY_SECRET}-legacy`,
      {
        algorithm: "HS256",
        issuer: JWT_ISSUER,
      },
    );
    expect(verifyAccessToken(token, withLegacy, config, { refresh: true }).sub).toBe("user-1");
    expect(refusal(token, withLegacy)).toBe("Token invalid: jwt expired");
    const forged = jwt.sign({ sub: "user-1", jti: "j" }, `${LEGACY_SECRET}-other`, {
      algorithm: "HS256",
      issuer: JWT_ISSUER,
    });
    expect(refusal(forged, withLegacy)).toBe("Token invalid: invalid signature");
  });

  it("when an HS256 token names a known kid and is MACed with its public key (algorithm confusion), then 'invalid algorithm'", () => {
    const confused = jwt.sign(
      { sub: "user-1", jti: "j" },
      key.publicKey.export({ type: "spki", format: "pem" }),
      {
        algorithm: "HS256",
        keyid: key.kid,
        issuer: JWT_ISSUER,
      },
    );
    expect(refusal(confused)).toBe("Token invalid: invalid algorithm");
  });

  it("when the token has another issuer, then it is refused", () => {
    expect(refusal(es256({ sub: "user-1", jti: "j" }, { issuer: "someone-else" }))).toMatch(
      /^Token invalid: jwt issuer invalid/,
    );
  });

  it("when a valid token lacks sub or jti, then it is 'Token invalid: token lacks sub or jti'", () => {
    expect(refusal(es256({ sub: "user-1" }))).toBe("Token invalid: token lacks sub or jti");
    expect(refusal(es256({ jti: "j" }))).toBe("Token invalid: token lacks sub or jti");
  });
});

describe("refresh tokens", () => {
  it("when a refresh token is created, then it is 256 random bits, URL-safe, and never repeats", () => {
    const a = newRefreshToken();
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(newRefreshToken()).not.toBe(a);
  });

  it("when a token is hashed, then the hash is a deterministic SHA-256 hex different from the token", () => {
    const token = newRefreshToken();
    expect(hashToken(token)).toBe(hashToken(token));
    expect(hashToken(token)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashToken(token)).not.toBe(token);
    expect(hashToken(token)).not.toBe(hashToken(newRefreshToken()));
    expect(hashToken("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });
});

describe("newRefreshToken", () => {
  it("when many are drawn (past the pool's refills), then each is 256 bits, URL-safe and never repeated", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2_000; i++) {
      const token = newRefreshToken();
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(token, "base64url")).toHaveLength(32);
      seen.add(token);
    }
    expect(seen.size).toBe(2_000);
  });
});
