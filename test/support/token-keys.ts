/**
 * Token keys made at run time for the tests (never a committed key: production refuses any key or
 * secret that appears in the repository, shared/config/key-checks.ts).
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";

/** A new EC P-256 private key, PEM (PKCS#8), as `openssl genpkey -algorithm EC …` makes. */
export const newSigningKeyPem = (): string =>
  generateKeyPairSync("ec", { namedCurve: "prime256v1" })
    .privateKey.export({ type: "pkcs8", format: "pem" })
    .toString();

/** A new refresh-token secret, as `openssl rand -hex 32` makes. */
export const newRefreshSecret = (): string => randomBytes(32).toString("hex");
