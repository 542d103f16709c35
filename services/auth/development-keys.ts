/**
 * Outside production, with JWT_PRIVATE_KEYS or REFRESH_TOKEN_SECRETS empty, auth makes its own at the
 * first start and keeps them in DATA_DIR/keys (folder 0700, files 0600), so that the next start, and
 * the CLI on the same DATA_DIR, sign and verify with the same ones: never a constant
 * (docs/decisions/0132-asymmetric-access-tokens.md).
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

export const DEVELOPMENT_KEY_FILE = "access-token-key.pem";
export const DEVELOPMENT_SECRET_FILE = "refresh-token-secret";

export const developmentKeysDir = (dataDir: string): string => path.join(dataDir, "keys");

/**
 * The file's content, made by `make` if the file does not exist yet. Written to a temporary file and
 * linked into place, which fails if another process got there first: then its file is the one read,
 * never a half-written one.
 */
function readOrCreate(file: string, make: () => string): string {
  try {
    return fs.readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
  fs.writeFileSync(temp, make(), { mode: 0o600, flag: "wx" });
  try {
    fs.linkSync(temp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  } finally {
    fs.rmSync(temp, { force: true });
  }
  return fs.readFileSync(file, "utf8");
}

/** The development signing key (PEM, PKCS#8), made at the first start. */
export const developmentSigningKeyPem = (dataDir: string): string =>
  readOrCreate(path.join(developmentKeysDir(dataDir), DEVELOPMENT_KEY_FILE), () =>
    generateKeyPairSync("ec", { namedCurve: "prime256v1" })
      .privateKey.export({ type: "pkcs8", format: "pem" })
      .toString(),
  );

/** The development refresh-token secret (64 hex digits), made at the first start. */
export const developmentRefreshSecret = (dataDir: string): string =>
  readOrCreate(path.join(developmentKeysDir(dataDir), DEVELOPMENT_SECRET_FILE), () =>
    randomBytes(32).toString("hex"),
  ).trim();
