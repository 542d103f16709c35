/**
 * Auth's keys, from its configuration: the access-token keys (JWT_PRIVATE_KEYS: the first signs, all
 * verify and are published), the refresh tokens' MAC keys (REFRESH_TOKEN_SECRETS: the first MACs new
 * tokens, all verify) and the legacy HMAC secrets (JWT_LEGACY_SECRETS: verify only). The two kinds are
 * apart, so rotating the access-token keys never touches a refresh token (docs/decisions/0132).
 * Outside production an empty setting is filled from DATA_DIR/keys (./development-keys).
 */
import type { KeyObject } from "node:crypto";
import { legacyKeyOf, type VerificationKeys } from "../../shared/auth/access-token";
import { signingKeysOf, type PublicJwk, type SigningKey } from "../../shared/auth/jwk";
import type { Config } from "../../shared/config";
import { ConfigError } from "../../shared/errors";
import { developmentRefreshSecret, developmentSigningKeyPem } from "./development-keys";
import { refreshTokenKey } from "./refresh-token-format";

export interface AuthKeys {
  /** Signs every new access token. */
  signing: SigningKey;
  verification: VerificationKeys;
  /** The public keys, as /.well-known/jwks.json publishes them. */
  jwks: PublicJwk[];
  /** MACs new refresh tokens. */
  refreshMint: KeyObject;
  /** Every refresh MAC key, the minting one first. */
  refreshVerify: readonly KeyObject[];
}

export type KeysConfig = Pick<
  Config,
  "nodeEnv" | "dataDir" | "jwtPrivateKeys" | "refreshTokenSecrets" | "jwtLegacySecrets"
>;

const byConfig = new WeakMap<object, AuthKeys>();

/** The keys of a configuration, read (and outside production, made) once per configuration. */
export function authKeysOf(config: KeysConfig): AuthKeys {
  let keys = byConfig.get(config);
  if (!keys) {
    keys = loadAuthKeys(config);
    byConfig.set(config, keys);
  }
  return keys;
}

function loadAuthKeys(config: KeysConfig): AuthKeys {
  const development = config.nodeEnv !== "production";
  let signingKeys = config.jwtPrivateKeys;
  if (signingKeys.length === 0) {
    // loadConfig refuses production without them; this only guards a configuration made by hand.
    if (!development) throw new ConfigError("JWT_PRIVATE_KEYS must be set in production where auth runs");
    signingKeys = signingKeysOf(developmentSigningKeyPem(config.dataDir), "DATA_DIR/keys");
  }
  let secrets = config.refreshTokenSecrets;
  if (secrets.length === 0) {
    if (!development)
      throw new ConfigError("REFRESH_TOKEN_SECRETS must be set in production where auth runs");
    secrets = [developmentRefreshSecret(config.dataDir)];
  }
  const refreshVerify = secrets.map(refreshTokenKey);
  return {
    signing: signingKeys[0],
    verification: {
      byKid: new Map(signingKeys.map((k) => [k.kid, k.publicKey])),
      legacy: config.jwtLegacySecrets.map(legacyKeyOf),
    },
    jwks: signingKeys.map((k) => k.jwk),
    refreshMint: refreshVerify[0],
    refreshVerify,
  };
}
