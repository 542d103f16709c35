/**
 * Judging an access token (a JWT: ES256 pinned, `kid` naming the key, `sub`, `jti`, `iat`, `exp`,
 * `iss`). Auth signs and judges with its own keys; the gateway judges with the public keys auth
 * publishes (services/gateway/jwks-cache.ts), so what either refuses is refused with the same words
 * (jsonwebtoken's own: "jwt expired", "invalid signature", "invalid algorithm", "jwt malformed"…).
 * HS256/384/512 tokens, issued before ES256 (docs/decisions/0132), verify only with the legacy secrets
 * auth may hold (JWT_LEGACY_SECRETS).
 */
import { createSecretKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import jwt from "jsonwebtoken";
import type { Config } from "../config";
import { TokenInvalidError } from "../errors";
import { ACCESS_TOKEN_ALGORITHM } from "./jwk";

export interface AccessClaims {
  sub: string;
  jti: string;
  exp: number;
  iat: number;
}

/**
 * The `iss` of every access token, pinned on verification. A constant: changing it would sign everyone
 * out, and a backend verifying tokens with the published keys pins this value too.
 */
export const JWT_ISSUER = "rounds-platform";

export type TokenConfig = Pick<Config, "accessTokenTtlSeconds" | "refreshTokenTtlSeconds">;

/** The keys a verifier holds. */
export interface VerificationKeys {
  /** Public keys by kid. */
  byKid: ReadonlyMap<string, KeyObject>;
  /** HMAC keys of the tokens issued before ES256 (JWT_LEGACY_SECRETS): auth's alone, else empty. */
  legacy: readonly KeyObject[];
}

export const LEGACY_ALGORITHMS: jwt.Algorithm[] = ["HS256", "HS384", "HS512"];

/**
 * What a verifier can say of a token: valid (its claims), refused (the error to answer), or signed by
 * a key it does not hold (`unknown-key`: the gateway asks for the keys again, or leaves it to auth).
 */
export type Judgement =
  | { kind: "valid"; claims: AccessClaims }
  | { kind: "refused"; error: TokenInvalidError }
  | { kind: "unknown-key"; kid: string };

/** The header of a JWT, or null when the token is not one. */
export function headerOf(token: string): { alg?: unknown; kid?: unknown } | null {
  const dot = token.indexOf(".");
  if (dot <= 0) return null;
  try {
    const header: unknown = JSON.parse(Buffer.from(token.slice(0, dot), "base64url").toString("utf8"));
    return header && typeof header === "object" ? (header as { alg?: unknown; kid?: unknown }) : null;
  } catch {
    return null;
  }
}

/** Whether a token says it is an HMAC one (HS256/384/512), as tokens issued before ES256 are. */
export const isLegacyToken = (token: string): boolean =>
  LEGACY_ALGORITHMS.includes(headerOf(token)?.alg as jwt.Algorithm);

// A key to hand jsonwebtoken for a token no held key can verify (another algorithm, alg "none"):
// jsonwebtoken then refuses it with its own words, the same here and at auth.
let anyPublicKey: KeyObject | null = null;
const someKey = () => (anyPublicKey ??= generateKeyPairSync("ec", { namedCurve: "prime256v1" }).publicKey);

/** Options of both algorithms' verification: issuer pinned; on a refresh, expiry within the bound. */
function verifyOptions(config: TokenConfig, refresh: boolean): jwt.VerifyOptions {
  return {
    issuer: JWT_ISSUER,
    clockTolerance: refresh ? config.refreshTokenTtlSeconds : 0,
  };
}

function claimsOf(payload: string | jwt.JwtPayload): AccessClaims {
  if (typeof payload === "string" || typeof payload.sub !== "string" || typeof payload.jti !== "string") {
    throw new TokenInvalidError("token lacks sub or jti");
  }
  return { sub: payload.sub, jti: payload.jti, exp: payload.exp ?? 0, iat: payload.iat ?? 0 };
}

function refusal(err: unknown, config: TokenConfig, refresh: boolean): TokenInvalidError {
  if (err instanceof TokenInvalidError) return err;
  if (refresh && err instanceof jwt.TokenExpiredError) {
    return new TokenInvalidError(
      `jwt expired more than REFRESH_TOKEN_TTL (${config.refreshTokenTtlSeconds} s) ago, too long to refresh`,
    );
  }
  return new TokenInvalidError((err as Error).message);
}

function verifyWith(
  token: string,
  key: KeyObject,
  algorithms: jwt.Algorithm[],
  config: TokenConfig,
  refresh: boolean,
): Extract<Judgement, { kind: "valid" | "refused" }> {
  try {
    const payload = jwt.verify(token, key, { ...verifyOptions(config, refresh), algorithms });
    return { kind: "valid", claims: claimsOf(payload) };
  } catch (err) {
    return { kind: "refused", error: refusal(err, config, refresh) };
  }
}

/**
 * Judges signature, algorithm, issuer and expiry. `refresh`: the token is presented to refresh the
 * token set, so it may have expired up to REFRESH_TOKEN_TTL ago (a refresh token lives no longer, so the token it came with may not either).
 */
export function judgeAccessToken(
  token: string,
  keys: VerificationKeys,
  config: TokenConfig,
  opts: { refresh?: boolean } = {},
): Judgement {
  const refresh = opts.refresh ?? false;
  const header = headerOf(token);
  if (header?.alg === ACCESS_TOKEN_ALGORITHM && typeof header.kid === "string") {
    const key = keys.byKid.get(header.kid);
    if (!key) return { kind: "unknown-key", kid: header.kid };
    return verifyWith(token, key, [ACCESS_TOKEN_ALGORITHM], config, refresh);
  }
  if (keys.legacy.length > 0 && LEGACY_ALGORITHMS.includes(header?.alg as jwt.Algorithm)) {
    let judged: ReturnType<typeof verifyWith> = {
      kind: "refused",
      error: new TokenInvalidError("invalid signature"),
    };
    for (const key of keys.legacy) {
      judged = verifyWith(token, key, LEGACY_ALGORITHMS, config, refresh);
      // Another secret may have signed it: only a bad signature lets the next one try.
      if (judged.kind === "valid" || judged.error.message !== "Token invalid: invalid signature")
        return judged;
    }
    return judged;
  }
  // Malformed, no kid, another algorithm (HS* without legacy secrets, none, RS256…): jsonwebtoken says why.
  return verifyWith(
    token,
    keys.byKid.values().next().value ?? someKey(),
    [ACCESS_TOKEN_ALGORITHM],
    config,
    refresh,
  );
}

/** For auth, which holds every key: valid claims, or a TokenInvalidError. */
export function verifyAccessToken(
  token: string,
  keys: VerificationKeys,
  config: TokenConfig,
  opts: { refresh?: boolean } = {},
): AccessClaims {
  const judged = judgeAccessToken(token, keys, config, opts);
  if (judged.kind === "valid") return judged.claims;
  if (judged.kind === "refused") throw judged.error;
  // A kid none of auth's keys has: signed by a key it never held, or one removed since.
  throw new TokenInvalidError("invalid signature");
}

/** The HMAC key of a legacy secret, made once (a string key costs jsonwebtoken a parse per call: decision 0132). */
const legacyKeys = new Map<string, KeyObject>();
export function legacyKeyOf(secret: string): KeyObject {
  let key = legacyKeys.get(secret);
  if (!key) {
    key = createSecretKey(Buffer.from(secret, "utf8"));
    legacyKeys.set(secret, key);
  }
  return key;
}
