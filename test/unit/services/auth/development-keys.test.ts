import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { authKeysOf } from "../../../../services/auth/auth-keys";
import {
  developmentKeysDir,
  developmentRefreshSecret,
  developmentSigningKeyPem,
} from "../../../../services/auth/development-keys";
import { loadConfig } from "../../../../shared/config";
import { ConfigError } from "../../../../shared/errors";

const dirs: string[] = [];
const tmp = () => {
  const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "dev-keys-")), "not-yet");
  dirs.push(path.dirname(dir));
  return dir;
};
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

describe("development keys", () => {
  it("when auth starts without keys outside production, then a key and a secret are made in DATA_DIR/keys (folder 0700, files 0600, folder created), and the next start reuses them", () => {
    const dataDir = tmp();
    const first = authKeysOf(loadConfig({ DATA_DIR: dataDir }));
    expect(fs.statSync(developmentKeysDir(dataDir)).mode & 0o777).toBe(0o700);
    for (const f of fs.readdirSync(developmentKeysDir(dataDir))) {
      expect({ f, mode: fs.statSync(path.join(developmentKeysDir(dataDir), f)).mode & 0o777 }).toEqual({
        f,
        mode: 0o600,
      });
    }
    const again = authKeysOf(loadConfig({ DATA_DIR: dataDir }));
    expect(again).not.toBe(first);
    expect(again.signing.kid).toBe(first.signing.kid);
    expect(again.refreshMint.export().equals(first.refreshMint.export())).toBe(true);
    expect(developmentRefreshSecret(dataDir)).toMatch(/^[0-9a-f]{64}$/);
  });

  it("when two data folders start, then each has its own key: never a constant", () => {
    const a = authKeysOf(loadConfig({ DATA_DIR: tmp() }));
    const b = authKeysOf(loadConfig({ DATA_DIR: tmp() }));
    expect(a.signing.kid).not.toBe(b.signing.kid);
    expect(a.refreshMint.export().equals(b.refreshMint.export())).toBe(false);
  });

  it("when the key file already exists (another process made it first), then it is read, not replaced", () => {
    const dataDir = tmp();
    const made = developmentSigningKeyPem(dataDir);
    expect(developmentSigningKeyPem(dataDir)).toBe(made);
    expect(fs.readdirSync(developmentKeysDir(dataDir)).sort()).toEqual(["access-token-key.pem"]);
  });

  it("when keys are configured, then no file is made", () => {
    const dataDir = tmp();
    const keys = authKeysOf(
      loadConfig({
        DATA_DIR: dataDir,
        JWT_PRIVATE_KEYS: developmentSigningKeyPem(tmp()),
        REFRESH_TOKEN_SECRETS: "f".repeat(16) + "0123456789abcdef".repeat(3),
      }),
    );
    expect(keys.jwks).toHaveLength(1);
    expect(fs.existsSync(developmentKeysDir(dataDir))).toBe(false);
  });

  it("when a configuration made by hand says production without keys, then no key is made", () => {
    const config = { ...loadConfig({ DATA_DIR: tmp() }), nodeEnv: "production" as const };
    expect(() => authKeysOf(config)).toThrow(ConfigError);
  });
});
