import jwt from "jsonwebtoken";
import { callerOfBearer, rememberIssued, type BearerDeps } from "../../../../services/gateway/bearer";
import { JwksCache } from "../../../../services/gateway/jwks-cache";
import { TokenCache } from "../../../../services/gateway/token-cache";
import { signAccessToken } from "../../../../services/auth/tokens";
import * as accessToken from "../../../../shared/auth/access-token";
import {
  JWT_ISSUER,
  legacyKeyOf,
  verifyAccessToken,
  type TokenConfig,
} from "../../../../shared/auth/access-token";
import { signingKeysOf, type SigningKey } from "../../../../shared/auth/jwk";
import type { JwksResult, VerifyTokenResult } from "../../../../shared/contracts/auth";
import { TokenInvalidError, UserRemovedError } from "../../../../shared/errors";
import { LocalCache } from "../../../../shared/runtime/local-cache";
import { newRefreshSecret, newSigningKeyPem } from "../../../support/token-keys";

const config: TokenConfig = {
  accessTokenTtlSeconds: 900,
  refreshTokenTtlSeconds: 3600,
};
const CACHE_MS = 60_000;
const newKey = (): SigningKey => signingKeysOf(newSigningKeyPem(), "JWT_PRIVATE_KEYS")[0];
const LEGACY_SECRET = newRefreshSecret();

/** What auth holds: its keys (the first signs), and the legacy secrets. */
interface Auth {
  keys: SigningKey[];
  legacy: string[];
}

/**
 * A gateway's deps whose auth and users answer as real ones would, for the users they are told are
 * removed; `asked` lists the tokens sent to auth, `statuses` the users asked of users, `fetches` counts
 * auth.jwks calls.
 */
function gateway(
  removed = new Set<string>(),
  auth: Auth = { keys: [signer], legacy: [] },
  cacheMs = CACHE_MS,
) {
  const asked: string[] = [];
  const statuses: string[] = [];
  const fetches = { count: 0 };
  const held = () => ({
    byKid: new Map(auth.keys.map((k) => [k.kid, k.publicKey])),
    legacy: auth.legacy.map(legacyKeyOf),
  });
  const deps: BearerDeps = {
    tokens: new TokenCache(cacheMs, 100),
    activeUsers: new LocalCache<true>(cacheMs, 100),
    keys: new JwksCache(
      async (): Promise<JwksResult> => {
        fetches.count += 1;
        return { keys: auth.keys.map((k) => k.jwk), legacy_tokens: auth.legacy.length > 0 };
      },
      () => undefined,
    ),
    config,
    async askAuth(token: string, ignoreExpiration: boolean): Promise<VerifyTokenResult> {
      asked.push(token);
      const claims = verifyAccessToken(token, held(), config, { refresh: ignoreExpiration });
      if (removed.has(claims.sub)) throw new UserRemovedError();
      return { id: claims.sub, token_id: claims.jti, exp: claims.exp };
    },
    async isActive(userId: string): Promise<boolean> {
      statuses.push(userId);
      return !removed.has(userId);
    },
  };
  return { deps, asked, statuses, fetches };
}

const signer = newKey();
const nowMs = Date.now();
const nowSeconds = Math.floor(nowMs / 1000);
const tokenOf = (user: string, issuedSecondsAgo = 0, key = signer) =>
  signAccessToken(user, key, config, nowSeconds - issuedSecondsAgo).token;

describe("callerOfBearer", () => {
  it("when a user's first token is presented, then it is verified here and users (not auth) is asked whether the user is active, once", async () => {
    const { deps, asked, statuses } = gateway();
    const first = tokenOf("alice");
    const second = tokenOf("alice");

    expect(await callerOfBearer(deps, first, false, nowMs)).toMatchObject({ id: "alice" });
    expect(await callerOfBearer(deps, second, false, nowMs)).toMatchObject({ id: "alice" });

    expect(asked).toEqual([]);
    expect(statuses).toEqual(["alice"]);
  });

  it("when a user's tokens are presented, then each is verified once, here", async () => {
    const { deps } = gateway();
    const verifications = jest.spyOn(accessToken, "judgeAccessToken");
    try {
      await callerOfBearer(deps, tokenOf("carol"), true, nowMs);
      expect(verifications).toHaveBeenCalledTimes(1);
      await callerOfBearer(deps, tokenOf("carol"), true, nowMs);
      expect(verifications).toHaveBeenCalledTimes(2);
    } finally {
      verifications.mockRestore();
    }
  });

  it("when a removed user's first token is presented, then 401 User removed, as auth would answer", async () => {
    const { deps, asked } = gateway(new Set(["gone"]));
    await expect(callerOfBearer(deps, tokenOf("gone"), false, nowMs)).rejects.toBeInstanceOf(
      UserRemovedError,
    );
    expect(asked).toEqual([]);
  });

  it("when AUTH_CACHE_SECONDS is 0, then every valid token is left to auth", async () => {
    const { deps, asked, statuses } = gateway(new Set(), undefined, 0);
    const token = tokenOf("alice");
    await callerOfBearer(deps, token, false, nowMs);
    await callerOfBearer(deps, token, false, nowMs);
    expect(asked).toEqual([token, token]);
    expect(statuses).toEqual([]);
  });

  it("when a refresh presents an expired token of an active user, then it is accepted without asking auth", async () => {
    const { deps, asked, statuses } = gateway();
    await callerOfBearer(deps, tokenOf("alice"), false, nowMs);
    const expired = tokenOf("alice", 2 * 900);

    expect(await callerOfBearer(deps, expired, true, nowMs)).toMatchObject({ id: "alice" });
    expect([asked, statuses]).toEqual([[], ["alice"]]);
    // Expired tokens are never remembered, and outside a refresh they are refused, here.
    await expect(callerOfBearer(deps, expired, false, nowMs)).rejects.toThrow("jwt expired");
    expect(asked).toEqual([]);
  });

  it("when the user was removed (user.removed heard), then users is asked again and the token refused", async () => {
    const removed = new Set<string>();
    const { deps, statuses } = gateway(removed);
    await callerOfBearer(deps, tokenOf("alice"), false, nowMs);
    removed.add("alice");
    deps.activeUsers.delete("alice");
    deps.tokens.forgetUser("alice");

    await expect(callerOfBearer(deps, tokenOf("alice"), true, nowMs)).rejects.toBeInstanceOf(
      UserRemovedError,
    );
    expect(statuses).toEqual(["alice", "alice"]);
  });

  it("when the word that the user is active is older than AUTH_CACHE_SECONDS, then users is asked again", async () => {
    const { deps, statuses } = gateway();
    await callerOfBearer(deps, tokenOf("alice"), false, nowMs);
    await callerOfBearer(deps, tokenOf("alice"), true, nowMs + CACHE_MS + 1);
    expect(statuses).toHaveLength(2);
  });

  it("when tokens the gateway can judge by itself are bad (forged, expired, malformed, another algorithm or issuer), then each is refused as auth would, without a call to auth", async () => {
    const { deps, asked } = gateway();
    const [head, body] = tokenOf("alice").split(".");
    const otherKey = newKey();
    const cases: [string, string, boolean][] = [
      [`${head}.${body}.${"A".repeat(86)}`, "Token invalid: invalid signature", false],
      [
        jwt.sign({ sub: "alice", jti: "j" }, otherKey.privateKey, {
          algorithm: "ES256",
          keyid: signer.kid,
          issuer: JWT_ISSUER,
        }),
        "Token invalid: invalid signature",
        false,
      ],
      [tokenOf("alice", 2 * 900), "Token invalid: jwt expired", false],
      [
        tokenOf("alice", 900 + 3600 + 60),
        "Token invalid: jwt expired more than REFRESH_TOKEN_TTL (3600 s) ago, too long to refresh",
        true,
      ],
      ["not-a-jwt", "Token invalid: jwt malformed", false],
      [
        jwt.sign({ sub: "alice", jti: "j" }, LEGACY_SECRET, { algorithm: "HS256", issuer: JWT_ISSUER }),
        "Token invalid: invalid algorithm",
        false,
      ],
      [
        jwt.sign({ sub: "alice", jti: "j" }, signer.privateKey, {
          algorithm: "ES256",
          keyid: signer.kid,
          issuer: "someone-else",
        }),
        "Token invalid: jwt issuer invalid. expected: rounds-platform",
        false,
      ],
    ];
    for (const [token, detail, refresh] of cases) {
      await expect(callerOfBearer(deps, token, refresh, nowMs)).rejects.toThrow(detail);
      // auth says the same of each
      await expect(deps.askAuth(token, refresh)).rejects.toThrow(detail);
    }
    expect(asked).toEqual(cases.map(([token]) => token));
    asked.length = 0;
    for (const [token, , refresh] of cases) {
      await expect(callerOfBearer(deps, token, refresh, nowMs)).rejects.toBeInstanceOf(TokenInvalidError);
    }
    expect(asked).toEqual([]);
  });

  it("when a token names a kid the gateway does not know, then it asks auth for its keys again (once per interval, one request at a time), and verifies it here", async () => {
    const auth: Auth = { keys: [signer], legacy: [] };
    const { deps, asked, fetches } = gateway(new Set(), auth);
    await callerOfBearer(deps, tokenOf("alice"), false, nowMs);
    expect(fetches.count).toBe(1);
    const added = newKey();
    auth.keys = [added, signer];
    const tokens = [tokenOf("alice", 0, added), tokenOf("alice", 0, added)];
    await Promise.all(tokens.map((t) => callerOfBearer(deps, t, false, nowMs + 10_000)));
    expect(fetches.count).toBe(2);
    expect(asked).toEqual([]);
  });

  it("when a kid is still unknown after asking for the keys again, then auth judges the token, and the keys are not asked for again within the interval", async () => {
    const { deps, asked, fetches } = gateway();
    await callerOfBearer(deps, tokenOf("alice"), false, nowMs);
    const stranger = tokenOf("alice", 0, newKey());
    await expect(callerOfBearer(deps, stranger, false, nowMs + 10_000)).rejects.toThrow(
      "Token invalid: invalid signature",
    );
    await expect(callerOfBearer(deps, stranger, false, nowMs + 11_000)).rejects.toThrow(
      "Token invalid: invalid signature",
    );
    expect(asked).toEqual([stranger, stranger]);
    expect(fetches.count).toBe(2);
  });

  it("when auth verifies HS256 tokens of before ES256 (JWT_LEGACY_SECRETS), then the gateway leaves them to auth; when it does not, it refuses them itself", async () => {
    const legacy = jwt.sign({ sub: "bob", jti: "old" }, LEGACY_SECRET, {
      algorithm: "HS256",
      issuer: JWT_ISSUER,
      expiresIn: 600,
    });
    const upgrading = gateway(new Set(), { keys: [signer], legacy: [LEGACY_SECRET] });
    expect(await callerOfBearer(upgrading.deps, legacy, false, nowMs)).toMatchObject({ id: "bob" });
    expect(upgrading.asked).toEqual([legacy]);

    const upgraded = gateway();
    await expect(callerOfBearer(upgraded.deps, legacy, false, nowMs)).rejects.toThrow(
      "Token invalid: invalid algorithm",
    );
    expect(upgraded.asked).toEqual([]);
  });

  it("when the keys are older than their max age, then they are asked for again: a key removed at auth stops verifying here", async () => {
    const auth: Auth = { keys: [newKey(), signer], legacy: [] };
    const { deps, fetches } = gateway(new Set(), auth);
    const old = tokenOf("alice");
    await callerOfBearer(deps, tokenOf("carol"), false, nowMs);
    auth.keys = [auth.keys[0]];
    await expect(callerOfBearer(deps, old, false, nowMs + 300_000)).rejects.toThrow(
      "Token invalid: invalid signature",
    );
    expect(fetches.count).toBe(2);
  });

  it("when the user is removed while users is asked about them, then the answer is not remembered", async () => {
    const removed = new Set<string>();
    const { deps, statuses } = gateway(removed);
    const isActive = deps.isActive.bind(deps);
    let hear: () => void = () => undefined;
    // users answers "active", but user.removed reaches the gateway before that answer does.
    deps.isActive = async (id) => {
      const answer = await isActive(id);
      await new Promise<void>((resolve) => (hear = resolve));
      return answer;
    };
    const token = tokenOf("alice");
    const first = callerOfBearer(deps, token, false, nowMs);
    await new Promise((resolve) => setImmediate(resolve));
    removed.add("alice");
    deps.activeUsers.delete("alice");
    deps.tokens.forgetUser("alice");
    hear();
    expect(await first).toMatchObject({ id: "alice" });

    deps.isActive = isActive;
    await expect(callerOfBearer(deps, token, false, nowMs)).rejects.toBeInstanceOf(UserRemovedError);
    expect(statuses).toEqual(["alice", "alice"]);
  });

  it("when the user is removed while auth is asked about their token, then the answer is not remembered", async () => {
    const removed = new Set<string>();
    const auth: Auth = { keys: [signer], legacy: [] };
    const other = gateway(removed, auth);
    await callerOfBearer(other.deps, tokenOf("carol"), false, nowMs);
    // A key auth added since the gateway fetched its keys, asked for again too lately: auth judges.
    const added = newKey();
    auth.keys = [added, signer];
    other.deps.keys.lookup = async () => undefined;
    const askAuth = other.deps.askAuth.bind(other.deps);
    let hear: () => void = () => undefined;
    other.deps.askAuth = async (token, ignoreExpiration) => {
      const answer = await askAuth(token, ignoreExpiration);
      await new Promise<void>((resolve) => (hear = resolve));
      return answer;
    };
    const token = tokenOf("bob", 0, added);
    const first = callerOfBearer(other.deps, token, false, nowMs);
    await new Promise((resolve) => setImmediate(resolve));
    removed.add("bob");
    other.deps.activeUsers.delete("bob");
    other.deps.tokens.forgetUser("bob");
    hear();
    expect(await first).toMatchObject({ id: "bob" });

    other.deps.askAuth = askAuth;
    await expect(callerOfBearer(other.deps, token, false, nowMs)).rejects.toBeInstanceOf(UserRemovedError);
    expect(other.asked).toEqual([token, token]);
  });

  it("when a refresh presents a token the gateway verified lately, even past its expiry, then it pays no verification and no call", async () => {
    const { deps, asked } = gateway();
    const token = tokenOf("dora", 900 - 10); // expires in 10 s
    await callerOfBearer(deps, token, false, nowMs);
    const later = nowMs + 20_000; // expired 10 s ago, verified 20 s ago (AUTH_CACHE_SECONDS 60)
    const clock = jest.spyOn(Date, "now").mockReturnValue(later); // jsonwebtoken's clock
    const verifications = jest.spyOn(accessToken, "judgeAccessToken");
    try {
      expect(await callerOfBearer(deps, token, true, later)).toMatchObject({ id: "dora" });
      expect(verifications).not.toHaveBeenCalled();
      // Outside a refresh the expired token is not served from memory, and is refused here.
      await expect(callerOfBearer(deps, token, false, later)).rejects.toThrow("jwt expired");
      expect(asked).toEqual([]);
    } finally {
      verifications.mockRestore();
      clock.mockRestore();
    }
  });

  it("when a remembered token expired longer ago than REFRESH_TOKEN_TTL, then a refresh with it is refused", async () => {
    const short = { ...config, refreshTokenTtlSeconds: 5 };
    const { deps } = gateway();
    deps.config = short;
    const token = tokenOf("erin", 900 - 10);
    await callerOfBearer(deps, token, false, nowMs);
    const clock = jest.spyOn(Date, "now").mockReturnValue(nowMs + 16_000); // jsonwebtoken's clock
    try {
      await expect(callerOfBearer(deps, token, true, nowMs + 16_000)).rejects.toThrow("too long to refresh");
    } finally {
      clock.mockRestore();
    }
  });

  it("when auth answers a token set, then its access token is known at once: reads and the next refresh with it pay no verification", async () => {
    const { deps, statuses } = gateway();
    const issued = tokenOf("fred");
    rememberIssued(deps, issued, deps.activeUsers.forgettings, nowMs);
    const verifications = jest.spyOn(accessToken, "judgeAccessToken");
    try {
      expect(await callerOfBearer(deps, issued, false, nowMs)).toMatchObject({ id: "fred" });
      expect(await callerOfBearer(deps, issued, true, nowMs + 1_000)).toMatchObject({ id: "fred" });
      expect([verifications.mock.calls.length, statuses]).toEqual([0, []]);
    } finally {
      verifications.mockRestore();
    }
  });

  it("when a user was removed while the token set was asked for, or the answer holds no token, then nothing is remembered", async () => {
    const { deps } = gateway();
    const before = deps.activeUsers.forgettings;
    deps.activeUsers.delete("gina");
    rememberIssued(deps, tokenOf("gina"), before, nowMs);
    rememberIssued(deps, "not.a-token", deps.activeUsers.forgettings, nowMs);
    rememberIssued(deps, undefined, deps.activeUsers.forgettings, nowMs);
    expect(deps.tokens.size).toBe(0);
  });
});
