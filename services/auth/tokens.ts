/**
 * Access and refresh tokens. Access tokens are JWTs signed ES256 by the first of JWT_PRIVATE_KEYS, its
 * thumbprint as `kid`, with `sub` (user id), `jti` (token id), `iat`, `exp` and `iss`, judged by
 * shared/auth/access-token (the gateway judges too, with the published public keys). Refresh tokens:
 * see refresh-token-format.ts; of a token only its SHA-256 hash is ever stored.
 */
import { createHash, randomFillSync, randomUUID } from "node:crypto";
import jwt from "jsonwebtoken";
import { JWT_ISSUER, type TokenConfig } from "../../shared/auth/access-token";
import { ACCESS_TOKEN_ALGORITHM, type SigningKey } from "../../shared/auth/jwk";

export { verifyAccessToken, type AccessClaims } from "../../shared/auth/access-token";

export function signAccessToken(
  userId: string,
  key: SigningKey,
  config: Pick<TokenConfig, "accessTokenTtlSeconds">,
  nowSeconds: number,
): { token: string; jti: string; exp: number } {
  const jti = randomUUID();
  const exp = nowSeconds + config.accessTokenTtlSeconds;
  const token = jwt.sign({ sub: userId, jti, iat: nowSeconds, exp }, key.privateKey, {
    algorithm: ACCESS_TOKEN_ALGORITHM,
    keyid: key.kid,
    issuer: JWT_ISSUER,
  });
  return { token, jti, exp };
}

/**
 * Random bytes for tokens, drawn from the CSPRNG 4 KiB at a time and handed out once each: a call to
 * randomBytes per token costs many times a draw from the pool (docs/decisions/0003-refresh-token-rotation.md;
 * Node's randomUUID keeps such a pool too). Every byte is used for one token only.
 */
const TOKEN_BYTES = 32;
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

/** Copies `length` fresh random bytes into `target` at `offset` (at most 32 at a time). */
export function fillRandom(target: Buffer, offset: number, length: number): void {
  if (poolOffset + length > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  pool.copy(target, offset, poolOffset, poolOffset + length);
  poolOffset += length;
}

/**
 * 256 random bits, URL-safe: the refresh tokens issued before families (decision 0003) had this form
 * (the tests make such tokens to check that they keep working); tokens are now made by
 * refresh-token-format.ts.
 */
export function newRefreshToken(): string {
  const bytes = Buffer.allocUnsafe(TOKEN_BYTES);
  fillRandom(bytes, 0, TOKEN_BYTES);
  return bytes.toString("base64url");
}

export const hashToken = (token: string): string => createHash("sha256").update(token).digest("hex");
