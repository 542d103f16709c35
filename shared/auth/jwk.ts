/**
 * The access-token keys: EC P-256 key pairs (ES256), each named by its RFC 7638 JWK thumbprint, so the
 * `kid` of a token follows from the key that signed it and no operator ever names one
 * (docs/decisions/0132-asymmetric-access-tokens.md). Read from PEM text (PKCS#8 or SEC1 blocks,
 * concatenated), published as a JWKS (RFC 7517) holding only the public members.
 */
import { createHash, createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";
import { ConfigError } from "../errors";

/** The one algorithm access tokens are signed with (pinned: RFC 8725 §3.1). */
export const ACCESS_TOKEN_ALGORITHM = "ES256";

/** A public key as published at /.well-known/jwks.json. */
export interface PublicJwk {
  kty: "EC";
  crv: "P-256";
  x: string;
  y: string;
  kid: string;
  alg: typeof ACCESS_TOKEN_ALGORITHM;
  use: "sig";
}

export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  jwk: PublicJwk;
}

const PEM_PRIVATE_KEY = /-----BEGIN ((?:EC |ENCRYPTED |RSA |)PRIVATE KEY)-----[\s\S]*?-----END \1-----/g;

/** Every PEM private-key block in a text, in order (an `EC PARAMETERS` block beside one is skipped). */
export const pemPrivateKeyBlocks = (text: string): string[] => text.match(PEM_PRIVATE_KEY) ?? [];

const isP256 = (key: KeyObject) =>
  key.asymmetricKeyType === "ec" && key.asymmetricKeyDetails?.namedCurve === "prime256v1";

/** RFC 7638 §3: SHA-256 of the required members in lexicographic order, without whitespace; base64url. */
export function thumbprintOf(publicKey: KeyObject): string {
  const jwk = publicKey.export({ format: "jwk" });
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y });
  return createHash("sha256").update(canonical).digest("base64url");
}

export function publicJwkOf(publicKey: KeyObject): PublicJwk {
  const { x, y } = publicKey.export({ format: "jwk" });
  return {
    kty: "EC",
    crv: "P-256",
    x: String(x),
    y: String(y),
    kid: thumbprintOf(publicKey),
    alg: ACCESS_TOKEN_ALGORITHM,
    use: "sig",
  };
}

/** A published JWK back to a public key; null unless it is an EC P-256 signing key with a kid. */
export function publicKeyOfJwk(jwk: unknown): { kid: string; key: KeyObject } | null {
  const j = jwk as Partial<PublicJwk> | null;
  if (!j || j.kty !== "EC" || j.crv !== "P-256" || typeof j.kid !== "string") return null;
  try {
    const key = createPublicKey({ key: { kty: "EC", crv: "P-256", x: j.x, y: j.y }, format: "jwk" });
    // A kid that is not the key's own thumbprint is a mistake (or a trick): never trusted.
    return thumbprintOf(key) === j.kid ? { kid: j.kid, key } : null;
  } catch {
    return null;
  }
}

const ordinal = (i: number) => `key ${i + 1}`;

/**
 * The keys of a JWT_PRIVATE_KEYS value, in order (the first signs). Any block that is not an unencrypted
 * EC P-256 private key is a ConfigError naming the setting and which key it is.
 */
export function signingKeysOf(pemText: string, env: string): SigningKey[] {
  const blocks = pemPrivateKeyBlocks(pemText);
  if (blocks.length === 0) {
    throw new ConfigError(`${env} holds no PEM private key (-----BEGIN PRIVATE KEY----- … -----END …)`);
  }
  return blocks.map((pem, i) => {
    let privateKey: KeyObject;
    try {
      privateKey = createPrivateKey(pem);
    } catch (err) {
      throw new ConfigError(`${env}: ${ordinal(i)} cannot be read (${(err as Error).message})`);
    }
    if (!isP256(privateKey)) {
      throw new ConfigError(
        `${env}: ${ordinal(i)} is not an EC P-256 key (make one with: openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256)`,
      );
    }
    const publicKey = createPublicKey(privateKey);
    const jwk = publicJwkOf(publicKey);
    return { kid: jwk.kid, privateKey, publicKey, jwk };
  });
}
