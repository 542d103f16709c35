/**
 * Access and refresh tokens. Access tokens are JWTs (algorithm pinned, key from config) with `sub` (user
 * id), `jti` (token id), `iat`, `exp` and `iss`, verified by shared/auth/access-token (the gateway
 * verifies too). Refresh tokens are opaque random strings; only their SHA-256 hash is ever stored.
 */
import { createHash, randomFillSync, randomUUID } from "node:crypto";
import jwt from "jsonwebtoken";
import { keyOf, type TokenConfig } from "../../shared/auth/access-token";

export { verifyAccessToken, type AccessClaims } from "../../shared/auth/access-token";

export function signAccessToken(
  userId: string,
  config: TokenConfig,
  nowSeconds: number,
): { token: string; jti: string; exp: number } {
  const jti = randomUUID();
  const exp = nowSeconds + config.accessTokenTtlSeconds;
  const token = jwt.sign({ sub: userId, jti, iat: nowSeconds, exp }, keyOf(config.jwtSecret), {
    algorithm: config.jwtAlgorithm,
    issuer: config.jwtIssuer,
  });
  return { token, jti, exp };
}

/**
 * Random bytes for tokens, drawn from the CSPRNG 4 KiB at a time and handed out once each: a call to
 * randomBytes per token costs many times a draw from the pool (docs/decisions/0066-token-random-pool.md;
 * Node's randomUUID keeps such a pool too). Every byte is used for one token only.
 */
const TOKEN_BYTES = 32;
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

/** 256 random bits, URL-safe. */
export function newRefreshToken(): string {
  if (poolOffset + TOKEN_BYTES > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const token = pool.toString("base64url", poolOffset, poolOffset + TOKEN_BYTES);
  poolOffset += TOKEN_BYTES;
  return token;
}

export const hashToken = (token: string): string => createHash("sha256").update(token).digest("hex");
