/** API keys: the key format, parsing, and the check against a stored record (scope, revocation). */
import { createHash } from "node:crypto";
import {
  InvalidApiKeyError,
  checkApiKey,
  newApiKey,
  parseApiKey,
  type ApiKeyDoc,
  type ApiKeyScope,
} from "../../../../services/auth/api-keys";
import { ErrorType, ForbiddenError } from "../../../../shared/errors";

type KeyRecord = Pick<ApiKeyDoc, "scope" | "secret_hash" | "revoked_at">;

const recordOf = (
  secretHash: string,
  scope: ApiKeyScope = "app",
  revokedAt: Date | null = null,
): KeyRecord => ({
  scope,
  secret_hash: secretHash,
  revoked_at: revokedAt,
});

/** The error checkApiKey throws, or fails the test when it throws none. */
function refusal(record: KeyRecord | null, secret: string, scope: ApiKeyScope): unknown {
  try {
    checkApiKey(record, secret, scope);
  } catch (err) {
    return err;
  }
  throw new Error("expected the key to be refused");
}

describe("newApiKey", () => {
  it("when a key is made, then it reads ak.<16 hex id>.<43 base64url secret> and parses back to its parts", () => {
    const k = newApiKey();
    expect(k.id).toMatch(/^[0-9a-f]{16}$/);
    expect(k.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(k.key).toBe(`ak.${k.id}.${k.secret}`);
    expect(parseApiKey(k.key)).toEqual({ id: k.id, secret: k.secret });
  });

  it("when a key is made, then the stored hash is the SHA-256 of the secret and contains no part of it", () => {
    const k = newApiKey();
    expect(k.secretHash).toBe(createHash("sha256").update(k.secret).digest("hex"));
    expect(k.secretHash).toMatch(/^[0-9a-f]{64}$/);
    expect(k.secretHash).not.toContain(k.secret);
    expect(k.secretHash).not.toBe(k.secret);
  });

  it("when many keys are made, then ids and secrets are all distinct", () => {
    const keys = Array.from({ length: 50 }, () => newApiKey());
    expect(new Set(keys.map((k) => k.id)).size).toBe(50);
    expect(new Set(keys.map((k) => k.secret)).size).toBe(50);
  });
});

describe("parseApiKey", () => {
  const id = "0123456789abcdef";
  const secret = "A".repeat(20) + "_-z9";

  it("when the key is well formed, then id and secret come back", () => {
    expect(parseApiKey(`ak.${id}.${secret}`)).toEqual({ id, secret });
  });

  it("when the secret is exactly 20 or 100 characters, then it parses", () => {
    expect(parseApiKey(`ak.${id}.${"a".repeat(20)}`)?.secret).toHaveLength(20);
    expect(parseApiKey(`ak.${id}.${"a".repeat(100)}`)?.secret).toHaveLength(100);
  });

  it.each([
    ["an empty string", ""],
    ["a bare secret", secret],
    ["a wrong prefix", `ak_${id}.${secret}`],
    ["another prefix", `pk.${id}.${secret}`],
    ["an upper-case prefix", `AK.${id}.${secret}`],
    ["an id of 15 hex digits", `ak.${id.slice(1)}.${secret}`],
    ["an id of 17 hex digits", `ak.${id}0.${secret}`],
    ["an upper-case hex id", `ak.${id.toUpperCase()}.${secret}`],
    ["a non-hex id", `ak.0123456789abcdeg.${secret}`],
    ["a secret of 19 characters", `ak.${id}.${"a".repeat(19)}`],
    ["a secret of 101 characters", `ak.${id}.${"a".repeat(101)}`],
    ["a secret with '+' or '/'", `ak.${id}.${"a".repeat(20)}+/`],
    ["a secret with padding", `ak.${id}.${"a".repeat(20)}=`],
    ["a missing secret", `ak.${id}.`],
    ["a missing id", `ak..${secret}`],
    ["an extra part", `ak.${id}.${secret}.extra`],
    ["surrounding spaces", ` ak.${id}.${secret} `],
    ["a trailing newline", `ak.${id}.${secret}\n`],
  ])("when the key has %s, then it does not parse", (_what, key) => {
    expect(parseApiKey(key)).toBeNull();
  });
});

describe("checkApiKey", () => {
  const k = newApiKey();

  it("when the secret matches a live key of the asked scope, then it passes", () => {
    expect(() => checkApiKey(recordOf(k.secretHash, "app"), k.secret, "app")).not.toThrow();
    expect(() =>
      checkApiKey(recordOf(k.secretHash, "notifications"), k.secret, "notifications"),
    ).not.toThrow();
  });

  it("when the secret is wrong, then it is 401 'Invalid API key'", () => {
    const err = refusal(recordOf(k.secretHash), newApiKey().secret, "app");
    expect(err).toBeInstanceOf(InvalidApiKeyError);
    expect(err).toMatchObject({ code: 401, message: "Invalid API key", type: ErrorType.TOKEN_INVALID });
  });

  it("when the stored hash itself is presented as the secret, then it is 401 'Invalid API key'", () => {
    const err = refusal(recordOf(k.secretHash), k.secretHash, "app");
    expect(err).toBeInstanceOf(InvalidApiKeyError);
    expect(err).toMatchObject({ code: 401, message: "Invalid API key" });
  });

  it("when there is no such key (null record), then it is the same 401 'Invalid API key'", () => {
    const err = refusal(null, k.secret, "app");
    expect(err).toBeInstanceOf(InvalidApiKeyError);
    expect(err).toMatchObject({ code: 401, message: "Invalid API key" });
  });

  it("when there is no such key and the secret hashes to nothing special, then the all-zero placeholder never matches", () => {
    // The placeholder is compared like a real hash; an empty secret must not slip through either.
    for (const secret of ["", "0".repeat(64), k.secret]) {
      expect(refusal(null, secret, "notifications")).toBeInstanceOf(InvalidApiKeyError);
    }
  });

  it("when the key was revoked, then it is 401 'API key revoked'", () => {
    const err = refusal(recordOf(k.secretHash, "app", new Date("2030-01-01T00:00:00Z")), k.secret, "app");
    expect(err).toBeInstanceOf(InvalidApiKeyError);
    expect(err).toMatchObject({ code: 401, message: "API key revoked" });
  });

  it("when the key was revoked and the secret is wrong, then it is 'Invalid API key', revealing nothing", () => {
    const err = refusal(recordOf(k.secretHash, "app", new Date()), "wrong-secret-wrong-secret", "app");
    expect(err).toMatchObject({ code: 401, message: "Invalid API key" });
  });

  it("when a valid key of the other scope is used, then it is 403 'API key not allowed for this operation'", () => {
    const app = refusal(recordOf(k.secretHash, "app"), k.secret, "notifications");
    expect(app).toBeInstanceOf(ForbiddenError);
    expect(app).toMatchObject({
      code: 403,
      message: "API key not allowed for this operation",
      type: ErrorType.FORBIDDEN,
    });
    const push = refusal(recordOf(k.secretHash, "notifications"), k.secret, "app");
    expect(push).toBeInstanceOf(ForbiddenError);
    expect(push).toMatchObject({ code: 403 });
  });

  it("when a wrong secret is used with the other scope, then it is 401, not 403: the scope is not revealed", () => {
    const err = refusal(recordOf(k.secretHash, "notifications"), newApiKey().secret, "app");
    expect(err).toBeInstanceOf(InvalidApiKeyError);
    expect(err).toMatchObject({ code: 401 });
  });
});

describe("checkApiKey with a damaged record", () => {
  it("when the stored hash is not 32 bytes of hex, then the key is refused with 401, not a crash", () => {
    const k = newApiKey();
    for (const hash of ["", "abc", "zz".repeat(32), `${k.secretHash}00`]) {
      const err = refusal(recordOf(hash, "app"), k.secret, "app");
      expect(err).toBeInstanceOf(InvalidApiKeyError);
      expect(err).toMatchObject({ code: 401, message: "Invalid API key" });
    }
  });
});
