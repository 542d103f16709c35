import jwt from "jsonwebtoken";
import { hashToken, newRefreshToken, signAccessToken, verifyAccessToken } from "../../services/auth/tokens";
import { ErrorType, TokenInvalidError } from "../../shared/errors";

const config = {
  jwtSecret: "unit-test-secret-0123456789abcdef-0123",
  jwtAlgorithm: "HS256",
  jwtIssuer: "rounds-platform",
  accessTokenTtlSeconds: 900,
} as const;

const nowSeconds = () => Math.floor(Date.now() / 1000);

function refusal(token: string, cfg: Parameters<typeof verifyAccessToken>[1] = config) {
  try {
    verifyAccessToken(token, cfg);
  } catch (err) {
    expect(err).toBeInstanceOf(TokenInvalidError);
    expect(err).toMatchObject({ code: 401, type: ErrorType.TOKEN_INVALID });
    return (err as Error).message;
  }
  throw new Error("expected the token to be refused");
}

describe("signAccessToken and verifyAccessToken", () => {
  it("when a fresh token is verified, then its claims come back", () => {
    const now = nowSeconds();
    const { token, jti, exp } = signAccessToken("user-1", config, now);
    expect(exp).toBe(now + 900);
    expect(verifyAccessToken(token, config)).toEqual({ sub: "user-1", jti, exp, iat: now });
  });

  it("when two tokens are signed, then each has its own jti", () => {
    const now = nowSeconds();
    expect(signAccessToken("u", config, now).jti).not.toBe(signAccessToken("u", config, now).jti);
  });

  it("when the token is signed, then it uses the pinned algorithm and the issuer", () => {
    const { token } = signAccessToken("user-1", config, nowSeconds());
    const decoded = jwt.decode(token, { complete: true });
    expect(decoded?.header.alg).toBe("HS256");
    expect(decoded?.payload).toMatchObject({ iss: "rounds-platform", sub: "user-1" });
  });

  it("when the token has expired, then it is 'Token invalid: jwt expired'", () => {
    const { token } = signAccessToken("user-1", config, nowSeconds() - 3600);
    expect(refusal(token)).toBe("Token invalid: jwt expired");
  });

  it("when an expired token is verified with ignoreExpiration, then its claims come back", () => {
    const { token } = signAccessToken("user-1", config, nowSeconds() - 3600);
    expect(verifyAccessToken(token, config, { ignoreExpiration: true }).sub).toBe("user-1");
  });

  it("when the token was signed with another key, then it is 'Token invalid: invalid signature'", () => {
    const { token } = signAccessToken(
      "user-1",
      { ...config, jwtSecret: "another-secret-0123456789abcdef-xyz" },
      nowSeconds(),
    );
    expect(refusal(token)).toBe("Token invalid: invalid signature");
  });

  it("when the token is garbage, then it is 'Token invalid: jwt malformed'", () => {
    expect(refusal("not-a-jwt")).toBe("Token invalid: jwt malformed");
  });

  it("when the token uses the 'none' algorithm, then it is refused", () => {
    const unsigned = jwt.sign({ sub: "user-1", jti: "j" }, null, {
      algorithm: "none",
      issuer: config.jwtIssuer,
    });
    expect(unsigned.split(".")[2]).toBe("");
    expect(refusal(unsigned)).toBe("Token invalid: jwt signature is required");
  });

  it("when the token uses another HMAC algorithm than the pinned one, then it is 'invalid algorithm'", () => {
    const token = jwt.sign({ sub: "user-1", jti: "j" }, config.jwtSecret, {
      algorithm: "HS512",
      issuer: config.jwtIssuer,
    });
    expect(refusal(token)).toBe("Token invalid: invalid algorithm");
  });

  it("when the token has another issuer, then it is refused", () => {
    const token = jwt.sign({ sub: "user-1", jti: "j" }, config.jwtSecret, {
      algorithm: "HS256",
      issuer: "someone-else",
    });
    expect(refusal(token)).toMatch(/^Token invalid: jwt issuer invalid/);
  });

  it("when a valid token lacks sub or jti, then it is 'Token invalid: token lacks sub or jti'", () => {
    const noJti = jwt.sign({ sub: "user-1" }, config.jwtSecret, {
      algorithm: "HS256",
      issuer: config.jwtIssuer,
    });
    const noSub = jwt.sign({ jti: "j" }, config.jwtSecret, { algorithm: "HS256", issuer: config.jwtIssuer });
    expect(refusal(noJti)).toBe("Token invalid: token lacks sub or jti");
    expect(refusal(noSub)).toBe("Token invalid: token lacks sub or jti");
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
