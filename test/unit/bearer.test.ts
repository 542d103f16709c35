import { callerOfBearer, type BearerDeps } from "../../services/gateway/bearer";
import { TokenCache } from "../../services/gateway/token-cache";
import { signAccessToken } from "../../services/auth/tokens";
import * as accessToken from "../../shared/auth/access-token";
import { verifyAccessToken, type TokenConfig } from "../../shared/auth/access-token";
import type { VerifyTokenResult } from "../../shared/contracts/auth";
import { TokenInvalidError, UserRemovedError } from "../../shared/errors";
import { LocalCache } from "../../shared/runtime/local-cache";

const config: TokenConfig = {
  jwtSecret: "unit-test-secret-0123456789abcdef-0123",
  jwtAlgorithm: "HS256",
  jwtIssuer: "rounds-platform",
  accessTokenTtlSeconds: 900,
};
const CACHE_MS = 60_000;

/**
 * A gateway's deps whose auth and users answer as real ones would, for the users they are told are
 * removed; `asked` lists the tokens sent to auth, `statuses` the users asked of users.
 */
function gateway(removed = new Set<string>(), gatewayConfig = config, cacheMs = CACHE_MS) {
  const asked: string[] = [];
  const statuses: string[] = [];
  const deps: BearerDeps = {
    tokens: new TokenCache(cacheMs, 100),
    activeUsers: new LocalCache<true>(cacheMs, 100),
    config: gatewayConfig,
    async askAuth(token: string, ignoreExpiration: boolean): Promise<VerifyTokenResult> {
      asked.push(token);
      const claims = verifyAccessToken(token, config, { ignoreExpiration });
      if (removed.has(claims.sub)) throw new UserRemovedError();
      return { id: claims.sub, token_id: claims.jti, exp: claims.exp };
    },
    async isActive(userId: string): Promise<boolean> {
      statuses.push(userId);
      return !removed.has(userId);
    },
  };
  return { deps, asked, statuses };
}

const nowMs = Date.now();
const nowSeconds = Math.floor(nowMs / 1000);
const tokenOf = (user: string, issuedSecondsAgo = 0) =>
  signAccessToken(user, config, nowSeconds - issuedSecondsAgo).token;

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
    const verifications = jest.spyOn(accessToken, "verifyAccessToken");
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

  it("when AUTH_CACHE_SECONDS is 0, then every token is left to auth", async () => {
    const { deps, asked, statuses } = gateway(new Set(), config, 0);
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
    // Expired tokens are never remembered, and outside a refresh they are refused by auth.
    await expect(callerOfBearer(deps, expired, false, nowMs)).rejects.toThrow("jwt expired");
    expect(asked).toEqual([expired]);
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
    await callerOfBearer(deps, tokenOf("alice"), true, nowMs + CACHE_MS);
    expect(statuses).toHaveLength(2);
  });

  it("when a token does not verify here (forged, or this gateway has another secret), then auth decides", async () => {
    const { deps, asked } = gateway();
    await callerOfBearer(deps, tokenOf("alice"), false, nowMs);
    const [head, body] = tokenOf("alice").split(".");
    const forged = `${head}.${body}.${"A".repeat(43)}`;
    await expect(callerOfBearer(deps, forged, true, nowMs)).rejects.toBeInstanceOf(TokenInvalidError);
    expect(asked).toContain(forged);

    const misconfigured = gateway(new Set(), {
      ...config,
      jwtSecret: "another-secret-0123456789abcdef-0123456",
    });
    const token = tokenOf("bob");
    await callerOfBearer(misconfigured.deps, token, false, nowMs);
    const again = tokenOf("bob");
    expect(await callerOfBearer(misconfigured.deps, again, true, nowMs)).toMatchObject({ id: "bob" });
    expect(misconfigured.asked).toEqual([token, again]);
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
    const other = gateway(removed, { ...config, jwtSecret: "another-secret-0123456789abcdef-0123456" });
    const askAuth = other.deps.askAuth.bind(other.deps);
    let hear: () => void = () => undefined;
    other.deps.askAuth = async (token, ignoreExpiration) => {
      const answer = await askAuth(token, ignoreExpiration);
      await new Promise<void>((resolve) => (hear = resolve));
      return answer;
    };
    const token = tokenOf("bob");
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
});
