/**
 * What production refuses among the token keys and secrets (docs/decisions/0132-asymmetric-access-
 * tokens.md): a value that appears in the repository (a default, an example, a
 * placeholder, a test key), and a refresh secret too weak to be 32 random bytes.
 * test/unit/shared/config/key-checks.test.ts scans every tracked file for values given to these settings and PEM private keys, and asserts that
 * production refuses each one: a new example or fixture that these lists miss fails that test.
 */
import { ConfigError } from "../errors";
import type { SigningKey } from "../auth/jwk";

/** Secrets written in the repository at some time: never accepted in production. */
export const PUBLISHED_SECRETS: readonly string[] = [
  // The development default of JWT_SECRET until it was removed.
  "dev-only-secret-change-me-0123456789abcdef",
  // The Kubernetes Secret's placeholder (deploy/k8s/config.yaml).
  "replace-me-with-at-least-32-random-characters",
  // Secrets the unit tests used to sign with (test/unit, test/support).
  "unit-test-secret-0123456789abcdef-0123",
  "another-secret-0123456789abcdef-0123456",
  "another-secret-0123456789abcdef-xyz",
  "a-production-secret-of-32-chars!",
  "another-secret-of-at-least-32-characters!!",
  "some-other-secret-that-is-long-enough!!",
];

/** JWK thumbprints (kids) of the PEM private keys ever committed: none is, the tests make theirs. */
export const PUBLISHED_KEY_IDS: readonly string[] = [];

/** Smallest secret in any environment: what JWT_SECRET required (a former one may be kept to verify). */
export const MIN_SECRET_CHARACTERS = 32;

const HEX = /^[0-9a-fA-F]+$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/**
 * The bytes a secret encodes: hex (≥ 64 digits) or base64/base64url (≥ 43 characters, at least 21
 * distinct among the first 43); else null. Words joined by dashes are base64url too, and decode to
 * bytes as varied as random ones: but they use few letters (a passphrase of words about 17-20 of the
 * first 43, 43 random base64 characters about 31, fewer than 21 with a chance near 10⁻⁶).
 */
function secretBytes(secret: string): Buffer | null {
  if (HEX.test(secret) && secret.length >= 64 && secret.length % 2 === 0) return Buffer.from(secret, "hex");
  if (secret.length < 43 || new Set(secret.slice(0, 43)).size < 21) return null;
  if (BASE64.test(secret)) return Buffer.from(secret, "base64");
  if (BASE64URL.test(secret)) return Buffer.from(secret, "base64url");
  return null;
}

/**
 * Strong: encodes at least 32 bytes (hex, or base64/base64url as above) with at least 20 distinct
 * byte values among the first 32. 32 random bytes have about 30 (fewer than 20 has a chance below
 * 10⁻¹⁰); a repeated pattern has few. `openssl rand -hex 32` and `openssl rand -base64 32` pass.
 */
export function isStrongSecret(secret: string): boolean {
  const bytes = secretBytes(secret);
  return bytes !== null && bytes.length >= 32 && new Set(bytes.subarray(0, 32)).size >= 20;
}

const ordinal = (i: number) => (i === 0 ? "the first secret" : `secret ${i + 1}`);

/** Every environment: each secret of a list has at least MIN_SECRET_CHARACTERS. */
export function checkSecretLengths(env: string, secrets: readonly string[]): void {
  secrets.forEach((s, i) => {
    if (s.length < MIN_SECRET_CHARACTERS) {
      throw new ConfigError(`${env}: ${ordinal(i)} has fewer than ${MIN_SECRET_CHARACTERS} characters`);
    }
  });
}

/**
 * Production: no secret of the list is published; the first, which makes new tokens, is strong. The
 * others only verify tokens made before (a former JWT_SECRET kept so that refresh tokens issued before
 * the upgrade keep working) and were accepted under the rule of their time.
 */
export function checkProductionSecrets(
  env: string,
  secrets: readonly string[],
  opts: { firstMustBeStrong: boolean },
): void {
  secrets.forEach((s, i) => {
    if (PUBLISHED_SECRETS.includes(s)) {
      throw new ConfigError(
        `${env}: ${ordinal(i)} appears in the repository (a default, example or placeholder); make one with: openssl rand -hex 32`,
      );
    }
  });
  if (opts.firstMustBeStrong && secrets.length > 0 && !isStrongSecret(secrets[0])) {
    throw new ConfigError(
      `${env}: the first secret is weak: it must be 32 random bytes as hex (64 digits) or base64 (openssl rand -hex 32)`,
    );
  }
}

/** Production: no key is one whose private part was ever committed. */
export function checkProductionKeys(
  env: string,
  keys: readonly SigningKey[],
  published: readonly string[] = PUBLISHED_KEY_IDS,
): void {
  keys.forEach((k, i) => {
    if (published.includes(k.kid)) {
      throw new ConfigError(
        `${env}: key ${i + 1} (kid ${k.kid}) appears in the repository; make one with: openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`,
      );
    }
  });
}
