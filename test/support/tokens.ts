/**
 * Access tokens a test makes itself, for the cases an honest client never sends (expired, another
 * key, another algorithm): signed with the running system's own key unless told otherwise.
 */
import type { KeyObject } from "node:crypto";
import jwt from "jsonwebtoken";
import { authKeysOf } from "../../services/auth/auth-keys";
import { JWT_ISSUER } from "../../shared/auth/access-token";
import { signingKeysOf, type SigningKey } from "../../shared/auth/jwk";
import { configOf } from "../../shared/config";
import type { System } from "./system";

/** The key the system's auth signs with now (after a rotation, the new one). */
export function signingKeyOf(sys: System): SigningKey {
  if (sys.cluster) return signingKeysOf(sys.cluster.authEnv.JWT_PRIVATE_KEYS, "JWT_PRIVATE_KEYS")[0];
  // One process: the configuration auth was made with, its keys read (or made) once per configuration.
  return authKeysOf(configOf(sys.broker)).signing;
}

export interface SignOptions {
  /** Another key (ES256 unless `algorithm` says otherwise; an HMAC secret for HS*). */
  key?: SigningKey | KeyObject | string;
  algorithm?: jwt.Algorithm;
  /** The header's kid (default: the key's own thumbprint, for a SigningKey). */
  kid?: string | null;
  issuer?: string;
}

/**
 * A token with these claims (`iat` defaults to now, `exp` to now + 600 s, `jti` to a fresh one),
 * signed ES256 with the system's key unless `opts` says otherwise.
 */
export function signAccessToken(
  sys: System,
  claims: { sub: string; jti?: string; iat?: number; exp?: number } & Record<string, unknown>,
  opts: SignOptions = {},
): string {
  const now = Math.floor(Date.now() / 1000);
  const key = opts.key ?? signingKeyOf(sys);
  const signing = typeof key === "object" && "privateKey" in key ? key : null;
  const kid = opts.kid === undefined ? signing?.kid : opts.kid;
  return jwt.sign(
    { jti: `test-${Math.random().toString(36).slice(2)}`, iat: now, exp: now + 600, ...claims },
    signing ? signing.privateKey : (key as KeyObject | string),
    {
      algorithm: opts.algorithm ?? "ES256",
      issuer: opts.issuer ?? JWT_ISSUER,
      ...(kid ? { keyid: kid } : {}),
    },
  );
}
