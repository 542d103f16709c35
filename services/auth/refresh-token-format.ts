/**
 * The refresh token's format (docs/decisions/0003-refresh-token-rotation.md). A token names its family
 * (one sign-in), its generation within it and its own expiry, with 128 random bits and a MAC over all
 * of that:
 *
 *   version (1) | family id (16, a UUID) | generation (4) | expiry, Unix s (4) | random (16) | MAC (16)
 *
 * 57 bytes, 76 characters of base64url. The MAC is HMAC-SHA256, cut to 128 bits, keyed with a key
 * derived by HKDF from the first of REFRESH_TOKEN_SECRETS (the others verify: docs/decisions/0132;
 * before, from JWT_SECRET, the same way, so a former JWT_SECRET listed there still verifies): any
 * genuine token, of any generation, is recognised as genuine without being stored, so retired tokens
 * need no document of their own, and a token made up for a family (no MAC) cannot pass for a retired one and revoke it. Which token is the live one the family's
 * document says by the SHA-256 of the whole token; the random part makes that hash impossible to
 * reverse, so neither the database, nor the database with the configuration, gives a token that works.
 */
import { createHmac, createSecretKey, hkdfSync, timingSafeEqual, type KeyObject } from "node:crypto";
import { fillRandom } from "./tokens";

const VERSION = 1;
const FAMILY_AT = 1;
const GENERATION_AT = 17;
const EXPIRY_AT = 21;
const RANDOM_AT = 25;
const MAC_AT = 41;
const BYTES = 57;
const MAC_BYTES = BYTES - MAC_AT;
const FORMAT = /^[A-Za-z0-9_-]{76}$/;

/** What a genuine token says of itself. */
export interface RefreshTokenClaims {
  familyId: string;
  generation: number;
  /** Unix seconds. */
  expiresAt: number;
}

/**
 * What a presented string is: a token of this format with a valid MAC, one of this format without
 * (made up, or made with a secret not in REFRESH_TOKEN_SECRETS), or anything else, which may be a token issued before
 * this format (opaque, looked up by its hash).
 */
export type PresentedToken =
  { kind: "family"; claims: RefreshTokenClaims } | { kind: "forged" } | { kind: "legacy" };

const keys = new Map<string, KeyObject>();

/**
 * The MAC key for a refresh-token secret, derived once: HKDF-SHA256 with a salt and a label of its own use. A key
 * object, made once: given a Buffer, createHmac makes one on every call, which cost several times the
 * HMAC itself here (docs/decisions/0003-refresh-token-rotation.md; as for JWTs, 0132).
 */
export function refreshTokenKey(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    key = createSecretKey(
      Buffer.from(hkdfSync("sha256", secret, "rounds-platform", "refresh-token-mac/v1", 32)),
    );
    keys.set(secret, key);
  }
  return key;
}

const mac = (key: KeyObject, bytes: Buffer): Buffer =>
  createHmac("sha256", key).update(bytes.subarray(0, MAC_AT)).digest().subarray(0, MAC_BYTES);

const uuidBytes = (uuid: string): Buffer => Buffer.from(uuid.replace(/-/g, ""), "hex");

function uuidOf(bytes: Buffer): string {
  const hex = bytes.toString("hex", FAMILY_AT, GENERATION_AT);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A new token of the family's generation, valid until `expiresAt` (Unix seconds). */
export function mintRefreshToken(key: KeyObject, claims: RefreshTokenClaims): string {
  const bytes = Buffer.allocUnsafe(BYTES);
  bytes[0] = VERSION;
  uuidBytes(claims.familyId).copy(bytes, FAMILY_AT);
  bytes.writeUInt32BE(claims.generation, GENERATION_AT);
  bytes.writeUInt32BE(claims.expiresAt, EXPIRY_AT);
  fillRandom(bytes, RANDOM_AT, MAC_AT - RANDOM_AT);
  mac(key, bytes).copy(bytes, MAC_AT);
  return bytes.toString("base64url");
}

/**
 * What a presented string says of itself, its MAC not checked: before its claims count for anything, a
 * token must be the live one of its family (its SHA-256 is the one stored, which only the token itself
 * matches) or pass `hasValidMac`. Checking only then spares the live token, the common case, an HMAC.
 */
export function parseRefreshToken(token: string): PresentedToken {
  if (!FORMAT.test(token)) return { kind: "legacy" };
  const bytes = Buffer.from(token, "base64url");
  if (bytes.length !== BYTES || bytes[0] !== VERSION) return { kind: "forged" };
  return {
    kind: "family",
    claims: {
      familyId: uuidOf(bytes),
      generation: bytes.readUInt32BE(GENERATION_AT),
      expiresAt: bytes.readUInt32BE(EXPIRY_AT),
    },
  };
}

/** Whether a token of this format carries the MAC of its contents under `key` (or one of `keys`). */
export function hasValidMac(keys: KeyObject | readonly KeyObject[], token: string): boolean {
  const bytes = Buffer.from(token, "base64url");
  if (bytes.length !== BYTES) return false;
  const presented = bytes.subarray(MAC_AT);
  for (const key of Array.isArray(keys) ? keys : [keys as KeyObject]) {
    if (timingSafeEqual(mac(key, bytes), presented)) return true;
  }
  return false;
}

/** Reads a presented refresh token; only a genuine one yields claims. */
export function readRefreshToken(key: KeyObject, token: string): PresentedToken {
  const parsed = parseRefreshToken(token);
  if (parsed.kind === "family" && !hasValidMac(key, token)) return { kind: "forged" };
  return parsed;
}
