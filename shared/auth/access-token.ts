/**
 * Verifying an access token (a JWT: algorithm pinned, key from config, `sub`, `jti`, `iat`, `exp`,
 * `iss`). Auth signs and verifies; the gateway verifies too, to spare a call for a token whose user auth
 * has lately vouched for (services/gateway/bearer.ts).
 */
import { createSecretKey, type KeyObject } from "node:crypto";
import jwt from "jsonwebtoken";
import type { Config } from "../config";
import { TokenInvalidError } from "../errors";

export interface AccessClaims {
  sub: string;
  jti: string;
  exp: number;
  iat: number;
}

export type TokenConfig = Pick<Config, "jwtSecret" | "jwtAlgorithm" | "jwtIssuer" | "accessTokenTtlSeconds">;

// Given the secret as a string, jsonwebtoken first tries to read it as a public key (which throws) and
// only then makes a secret key, on every call: more than half of a whole cached read. A key object made
// once per secret avoids it (figures: docs/decisions/0044-jwt-key-object.md).
const keys = new Map<string, KeyObject>();
export function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    key = createSecretKey(Buffer.from(secret, "utf8"));
    keys.set(secret, key);
  }
  return key;
}

/**
 * Verifies signature, algorithm, issuer and (unless told not to) expiry. Any failure is a
 * TokenInvalidError carrying jsonwebtoken's own message ("jwt expired", "invalid signature", …).
 */
export function verifyAccessToken(
  token: string,
  config: TokenConfig,
  opts: { ignoreExpiration?: boolean } = {},
): AccessClaims {
  let payload: string | jwt.JwtPayload;
  try {
    payload = jwt.verify(token, keyOf(config.jwtSecret), {
      algorithms: [config.jwtAlgorithm],
      issuer: config.jwtIssuer,
      ignoreExpiration: opts.ignoreExpiration ?? false,
    });
  } catch (err) {
    throw new TokenInvalidError((err as Error).message);
  }
  if (typeof payload === "string" || typeof payload.sub !== "string" || typeof payload.jti !== "string") {
    throw new TokenInvalidError("token lacks sub or jti");
  }
  return { sub: payload.sub, jti: payload.jti, exp: payload.exp ?? 0, iat: payload.iat ?? 0 };
}
