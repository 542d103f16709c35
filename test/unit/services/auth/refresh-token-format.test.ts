import { randomUUID } from "node:crypto";
import {
  mintRefreshToken,
  readRefreshToken,
  refreshTokenKey,
} from "../../../../services/auth/refresh-token-format";
import { newRefreshToken } from "../../../../services/auth/tokens";

const SECRET = "unit-test-secret-0123456789abcdef-0123";
const key = refreshTokenKey(SECRET);
const claims = { familyId: randomUUID(), generation: 7, expiresAt: 1_900_000_000 };

describe("refresh token format", () => {
  it("when a token is minted, then it is 76 URL-safe characters and reads back as its family, generation and expiry", () => {
    const token = mintRefreshToken(key, claims);
    expect(token).toMatch(/^[A-Za-z0-9_-]{76}$/);
    expect(readRefreshToken(key, token)).toEqual({ kind: "family", claims });
  });

  it("when two tokens are minted with the same claims, then they differ (128 random bits each)", () => {
    const tokens = new Set(Array.from({ length: 1_000 }, () => mintRefreshToken(key, claims)));
    expect(tokens.size).toBe(1_000);
  });

  it("when any byte of a token is changed, then it reads as forged", () => {
    const bytes = Buffer.from(mintRefreshToken(key, claims), "base64url");
    for (let i = 0; i < bytes.length; i++) {
      const altered = Buffer.from(bytes);
      altered[i] ^= 0x01;
      expect(readRefreshToken(key, altered.toString("base64url")).kind).toBe("forged");
    }
  });

  it("when a token was made with another JWT secret, then it reads as forged", () => {
    const other = refreshTokenKey("another-secret-0123456789abcdef-0123456");
    expect(other.equals(key)).toBe(false);
    expect(readRefreshToken(key, mintRefreshToken(other, claims)).kind).toBe("forged");
  });

  it("when the key is derived, then it is 32 bytes, the same for the same secret, and not the secret itself", () => {
    expect(key.symmetricKeySize).toBe(32);
    expect(refreshTokenKey(SECRET).equals(key)).toBe(true);
    expect(key.export().toString("latin1")).not.toContain(SECRET.slice(0, 16));
  });

  it("when a string is not of the format (a token issued before it, or anything else), then it reads as legacy", () => {
    for (const s of [newRefreshToken(), "", "no-such-token", `${mintRefreshToken(key, claims)}x`]) {
      expect(readRefreshToken(key, s)).toEqual({ kind: "legacy" });
    }
  });
});
