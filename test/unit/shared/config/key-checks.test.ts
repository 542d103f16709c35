/**
 * What production refuses among the token keys and secrets, and what every environment requires
 * (shared/config/key-checks.ts, docs/decisions/0132). Keys and secrets are made at run time: the
 * repository holds none that works (the last case scans it to make sure).
 */
import { execFileSync } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pemPrivateKeyBlocks, signingKeysOf } from "../../../../shared/auth/jwk";
import { loadConfig, retiredSettingsIn } from "../../../../shared/config";
import { checkProductionKeys, isStrongSecret, PUBLISHED_SECRETS } from "../../../../shared/config/key-checks";
import { ConfigError } from "../../../../shared/errors";
import { newRefreshSecret, newSigningKeyPem } from "../../../support/token-keys";

const root = path.resolve(__dirname, "../../../..");
const pem = newSigningKeyPem();
const secret = newRefreshSecret();
const production = (extra: Record<string, string> = {}) => ({
  NODE_ENV: "production",
  SERVICES: "auth",
  JWT_PRIVATE_KEYS: pem,
  REFRESH_TOKEN_SECRETS: secret,
  ...extra,
});

/** The ConfigError loading `env` gives: one line (bin/start prints it as the whole refusal). */
function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as Error).message;
    expect(message).not.toContain("\n");
    return message;
  }
  throw new Error(`expected a refusal of ${JSON.stringify(Object.keys(env))}`);
}

const pemOf = (key: ReturnType<typeof generateKeyPairSync>["privateKey"], type: "pkcs8" | "sec1" = "pkcs8") =>
  key.export({ type, format: "pem" }).toString();

describe("the token keys in production", () => {
  it("when auth runs with a P-256 key and a strong refresh secret, then it loads, the first key signing", () => {
    const second = newSigningKeyPem();
    const config = loadConfig(production({ JWT_PRIVATE_KEYS: `${pem}${second}` }));
    expect(config.jwtPrivateKeys.map((k) => k.kid)).toEqual([
      signingKeysOf(pem, "x")[0].kid,
      signingKeysOf(second, "x")[0].kid,
    ]);
    expect(config.refreshTokenSecrets).toEqual([secret]);
  });

  it("when auth runs without JWT_PRIVATE_KEYS or REFRESH_TOKEN_SECRETS, then it refuses with one line naming the setting", () => {
    expect(refusal(production({ JWT_PRIVATE_KEYS: "" }))).toMatch(
      /^JWT_PRIVATE_KEYS must be set in production/,
    );
    expect(refusal(production({ REFRESH_TOKEN_SECRETS: "" }))).toMatch(
      /^REFRESH_TOKEN_SECRETS must be set in production/,
    );
  });

  it("when JWT_SECRET is still set, then production refuses with one line telling what replaced it; elsewhere it is named at start and ignored", () => {
    const message = refusal(production({ JWT_SECRET: secret }));
    expect(message).toMatch(/^JWT_SECRET is no longer read: JWT_PRIVATE_KEYS .* REFRESH_TOKEN_SECRETS/);
    expect(loadConfig({ JWT_SECRET: secret }).nodeEnv).toBe("development");
    expect(retiredSettingsIn({ JWT_SECRET: secret })).toEqual([message]);
    expect(retiredSettingsIn({})).toEqual([]);
  });

  it("when a key is not EC P-256, then it is refused in any environment, naming the setting and the key", () => {
    const others = [
      generateKeyPairSync("ec", { namedCurve: "secp384r1" }).privateKey,
      generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey,
      generateKeyPairSync("ed25519").privateKey,
    ];
    for (const key of others) {
      expect(refusal(production({ JWT_PRIVATE_KEYS: `${pem}${pemOf(key)}` }))).toMatch(
        /^JWT_PRIVATE_KEYS: key 2 is not an EC P-256 key/,
      );
      expect(refusal({ JWT_PRIVATE_KEYS: pemOf(key) })).toMatch(/^JWT_PRIVATE_KEYS: key 1 /);
    }
    expect(
      refusal({ JWT_PRIVATE_KEYS: "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----" }),
    ).toMatch(/^JWT_PRIVATE_KEYS: key 1 cannot be read/);
  });

  it("when a key is SEC1 (openssl ecparam), given with \\n for newlines, or in a file named by the setting, then it loads", () => {
    const key = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey;
    const sec1 = `-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n${pemOf(key, "sec1")}`;
    expect(loadConfig(production({ JWT_PRIVATE_KEYS: sec1 })).jwtPrivateKeys).toHaveLength(1);
    expect(
      loadConfig(production({ JWT_PRIVATE_KEYS: pem.replace(/\n/g, "\\n") })).jwtPrivateKeys,
    ).toHaveLength(1);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keys-"));
    try {
      const file = path.join(dir, "jwt-private-keys.pem");
      fs.writeFileSync(file, `${pem}${sec1}`, { mode: 0o600 });
      expect(loadConfig(production({ JWT_PRIVATE_KEYS: file })).jwtPrivateKeys).toHaveLength(2);
      expect(refusal(production({ JWT_PRIVATE_KEYS: path.join(dir, "missing.pem") }))).toMatch(
        /^JWT_PRIVATE_KEYS is neither PEM text nor a readable file/,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("when a key's thumbprint is among the published ones, then it is refused naming the setting", () => {
    const keys = signingKeysOf(pem, "JWT_PRIVATE_KEYS");
    expect(() => checkProductionKeys("JWT_PRIVATE_KEYS", keys, [keys[0].kid])).toThrow(
      /^JWT_PRIVATE_KEYS: key 1 \(kid .*\) appears in the repository/,
    );
    expect(() => checkProductionKeys("JWT_PRIVATE_KEYS", keys, [])).not.toThrow();
  });

  it("when the refresh secret is what openssl rand -hex 32 or -base64 32 makes, then it is strong; a passphrase, a short or patterned one is weak and refused", () => {
    for (let i = 0; i < 50; i++) {
      expect(isStrongSecret(randomBytes(32).toString("hex"))).toBe(true);
      expect(isStrongSecret(randomBytes(32).toString("base64"))).toBe(true);
      expect(isStrongSecret(randomBytes(32).toString("base64url"))).toBe(true);
    }
    const weak = [
      "correct-horse-battery-staple-and-more-words-here",
      "Correct-Horse-Battery-Staple-And-More-Words",
      "replace-me-with-at-least-32-random-characters-too",
      "this is a long passphrase of many words and surely enough",
      randomBytes(31).toString("hex"),
      "ab".repeat(32),
      "0123456789abcdef".repeat(4),
      Buffer.from("a".repeat(40)).toString("base64"),
    ];
    for (const w of weak) {
      expect({ w, strong: isStrongSecret(w) }).toEqual({ w, strong: false });
      expect(refusal(production({ REFRESH_TOKEN_SECRETS: w }))).toMatch(
        /^REFRESH_TOKEN_SECRETS: the first secret (is weak|has fewer than 32 characters)/,
      );
    }
  });

  it("when a former JWT_SECRET of 32 characters follows a strong secret, then it loads (tokens issued with it keep working); shorter, it is refused in any environment", () => {
    const former = "a passphrase that was once a JWT_SECRET";
    expect(
      loadConfig(production({ REFRESH_TOKEN_SECRETS: `${secret},${former}` })).refreshTokenSecrets,
    ).toEqual([secret, former]);
    expect(loadConfig(production({ JWT_LEGACY_SECRETS: former })).jwtLegacySecrets).toEqual([former]);
    expect(refusal({ REFRESH_TOKEN_SECRETS: `${secret},short` })).toBe(
      "REFRESH_TOKEN_SECRETS: secret 2 has fewer than 32 characters",
    );
    expect(refusal({ JWT_LEGACY_SECRETS: "short" })).toBe(
      "JWT_LEGACY_SECRETS: the first secret has fewer than 32 characters",
    );
  });

  it("when any secret is a value published in the repository (the old default, the Kubernetes placeholder), then it is refused wherever it is listed", () => {
    expect(PUBLISHED_SECRETS).toEqual(
      expect.arrayContaining([
        "dev-only-secret-change-me-0123456789abcdef",
        "replace-me-with-at-least-32-random-characters",
      ]),
    );
    for (const published of PUBLISHED_SECRETS) {
      expect(refusal(production({ REFRESH_TOKEN_SECRETS: published }))).toMatch(/^REFRESH_TOKEN_SECRETS: /);
      expect(refusal(production({ REFRESH_TOKEN_SECRETS: `${secret},${published}` }))).toMatch(
        /^REFRESH_TOKEN_SECRETS: secret 2 appears in the repository/,
      );
      expect(refusal(production({ JWT_LEGACY_SECRETS: published }))).toMatch(
        /^JWT_LEGACY_SECRETS: the first secret appears in the repository/,
      );
    }
  });

  it("when a process that does not run auth is given a key or secret, then production refuses: they live where tokens are signed", () => {
    for (const name of ["JWT_PRIVATE_KEYS", "REFRESH_TOKEN_SECRETS", "JWT_LEGACY_SECRETS"]) {
      const env = {
        NODE_ENV: "production",
        SERVICES: "gateway",
        [name]: name === "JWT_PRIVATE_KEYS" ? pem : secret,
      };
      expect(refusal(env)).toBe(
        `${name} is set on a process that does not run auth (SERVICES=gateway): give it to auth alone`,
      );
    }
    expect(loadConfig({ NODE_ENV: "production", SERVICES: "gateway" }).jwtPrivateKeys).toEqual([]);
  });
});

const SETTINGS = ["JWT_PRIVATE_KEYS", "REFRESH_TOKEN_SECRETS", "JWT_LEGACY_SECRETS", "JWT_SECRET"];
const ASSIGNED = new RegExp(
  `\\b(${SETTINGS.join("|")})\\b["'\`]?\\s*[:=]\\s*["'\`]?([^\\s"'\`;)}\\]]+)`,
  "g",
);

/** The PEM private keys, and the values given to the key settings, that a text holds. */
function published(text: string): { keys: string[]; values: { setting: string; value: string }[] } {
  const values = [...text.matchAll(ASSIGNED)].flatMap(([, setting, raw]) =>
    raw
      .split(",")
      .map((value) => value.trim())
      // Not values: a shell or compose expansion, an elision, a placeholder in angle brackets.
      .filter((value) => value !== "" && !/^(\$|\.\.\.|…|<)/.test(value))
      .map((value) => ({ setting, value })),
  );
  return { keys: pemPrivateKeyBlocks(text), values };
}

describe("nothing in the repository works as a production key or secret", () => {
  it("when the scan reads a text with a PEM key and settings given values, then it finds each (and skips expansions)", () => {
    const key = newSigningKeyPem();
    const text = [
      `JWT_SECRET=some-value-written-in-a-readme`,
      `  REFRESH_TOKEN_SECRETS: "first-value-in-yaml,second-value-in-yaml"`,
      `JWT_LEGACY_SECRETS: \${JWT_LEGACY_SECRETS:?set it}`,
      "export JWT_SECRET=$(openssl rand -hex 32)",
      `JWT_PRIVATE_KEYS: |\n${key}`,
    ].join("\n");
    const found = published(text);
    expect(found.keys).toEqual([key.trim()]);
    expect(found.values).toEqual([
      { setting: "JWT_SECRET", value: "some-value-written-in-a-readme" },
      { setting: "REFRESH_TOKEN_SECRETS", value: "first-value-in-yaml" },
      { setting: "REFRESH_TOKEN_SECRETS", value: "second-value-in-yaml" },
      { setting: "JWT_PRIVATE_KEYS", value: "|" },
    ]);
  });

  it("when every tracked file is scanned, then production refuses each PEM private key and each value given to a key setting", () => {
    const files = execFileSync("git", ["ls-files", "-z"], { cwd: root })
      .toString()
      .split("\0")
      .filter((f) => f !== "" && fs.existsSync(path.join(root, f)));
    expect(files.length).toBeGreaterThan(100);
    let checked = 0;
    for (const file of files) {
      const bytes = fs.readFileSync(path.join(root, file));
      if (bytes.includes(0)) continue; // binary
      const { keys, values } = published(bytes.toString("utf8"));
      for (const key of keys) {
        expect({ file, refused: refusal(production({ JWT_PRIVATE_KEYS: key })) !== "" }).toEqual({
          file,
          refused: true,
        });
        checked += 1;
      }
      for (const { setting, value } of values) {
        const where = `${file}: ${setting}=${value}`;
        if (setting === "JWT_PRIVATE_KEYS") {
          expect({ where, message: refusal(production({ JWT_PRIVATE_KEYS: value })) }).toMatchObject({
            where,
          });
        } else {
          // As a refresh secret (first or former) and as a legacy secret: refused in every place.
          for (const env of [
            { REFRESH_TOKEN_SECRETS: value } as Record<string, string>,
            { REFRESH_TOKEN_SECRETS: `${secret},${value}` },
            { JWT_LEGACY_SECRETS: value },
          ]) {
            expect({ where, message: refusal(production(env)) }).toMatchObject({ where });
          }
        }
        checked += 1;
      }
    }
    // It met some at least: this file's own examples above, and the placeholders of deploy files.
    expect(checked).toBeGreaterThan(3);
  });
});
