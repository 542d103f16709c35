/**
 * Who a bearer token names, with as few calls as the answer allows:
 * - a token this gateway verified lately is known (TokenCache);
 * - every other token is judged here first, with the public keys auth publishes (./jwks-cache): one
 *   that is malformed, of another algorithm, badly signed by a known key, expired (beyond the refresh
 *   bound on a refresh) or of another issuer is refused here, with the words auth would use, without a
 *   call to auth (decision 0132);
 * - a valid one is accepted for a user active within AUTH_CACHE_SECONDS, without a call; for any other
 *   user, users is asked whether the user exists and is not removed (`users.status`), the very check
 *   auth would make after the same verification (decision 0046);
 * - a token whose kid is unknown even after asking auth for its keys again (rate-bounded), and an
 *   HS256 token of before ES256 while auth still verifies those (JWT_LEGACY_SECRETS), go to auth, whose
 *   answer is final; so does every valid token when AUTH_CACHE_SECONDS is 0 (the gateway remembers
 *   nothing and leaves the user's check to auth).
 * `activeUsers` lives as long as auth's own and is cleared by the same `user.removed`. What was learnt
 * by a call that a removal overtook (`user.removed` heard while it was in flight) is not remembered.
 * A token refresh, which accepts an expired access token, is one call (auth.refresh) instead of two.
 * The access token a refresh answers is remembered as verified (`rememberIssued`: auth, the signer,
 * issued it), so neither the reads made with it nor the next refresh that presents it, within
 * AUTH_CACHE_SECONDS, pays an ES256 verification (decision 0132).
 */
import {
  isLegacyToken,
  judgeAccessToken,
  type AccessClaims,
  type Judgement,
  type TokenConfig,
} from "../../shared/auth/access-token";
import type { Caller } from "../../shared/contracts/common";
import type { VerifyTokenResult } from "../../shared/contracts/auth";
import { UserRemovedError } from "../../shared/errors";
import type { LocalCache } from "../../shared/runtime/local-cache";
import type { JwksCache } from "./jwks-cache";
import type { TokenCache } from "./token-cache";

export interface BearerDeps {
  tokens: TokenCache;
  /** Users found active lately (by users or auth); the `user.removed` handler deletes from it. */
  activeUsers: LocalCache<true>;
  /** The public keys auth publishes. */
  keys: Pick<JwksCache, "current" | "lookup" | "legacyTokens">;
  config: TokenConfig;
  askAuth(token: string, ignoreExpiration: boolean): Promise<VerifyTokenResult>;
  /** `users.status`: whether the user exists and has not been removed. */
  isActive(userId: string): Promise<boolean>;
}

/** The claims of a token judged valid here, or null when auth must judge it; throws a refusal. */
async function judgedHere(
  deps: BearerDeps,
  token: string,
  refresh: boolean,
  now: number,
): Promise<AccessClaims | null> {
  const keys = await deps.keys.current(now);
  if (deps.keys.legacyTokens && isLegacyToken(token)) return null;
  let judged: Judgement = judgeAccessToken(token, keys, deps.config, { refresh });
  if (judged.kind === "unknown-key") {
    // A key auth added since the keys were fetched: ask for them again (rate-bounded), else auth judges.
    const key = await deps.keys.lookup(judged.kid, now);
    if (!key) return null;
    judged = judgeAccessToken(token, { byKid: new Map([[judged.kid, key]]), legacy: [] }, deps.config, {
      refresh,
    });
  }
  if (judged.kind === "refused") throw judged.error;
  return judged.kind === "valid" ? judged.claims : null;
}

export async function callerOfBearer(
  deps: BearerDeps,
  token: string,
  ignoreExpiration: boolean,
  now: number,
): Promise<Caller> {
  const known = ignoreExpiration
    ? deps.tokens.getForRefresh(token, now, deps.config.refreshTokenTtlSeconds * 1000)
    : deps.tokens.get(token, now);
  if (known) return known;
  const forgettings = deps.activeUsers.forgettings;
  const noRemovalSince = () => deps.activeUsers.forgettings === forgettings;
  const claims = await judgedHere(deps, token, ignoreExpiration, now);
  if (claims && deps.activeUsers.enabled) {
    if (deps.activeUsers.get(claims.sub, now) !== true) {
      if (!(await deps.isActive(claims.sub))) throw new UserRemovedError();
      if (noRemovalSince()) deps.activeUsers.set(claims.sub, true, now);
    }
    const caller = { id: claims.sub, token_id: claims.jti };
    if (!ignoreExpiration && noRemovalSince()) deps.tokens.set(token, caller, claims.exp, now);
    return caller;
  }
  const { exp, ...caller } = await deps.askAuth(token, ignoreExpiration);
  if (!noRemovalSince()) return caller;
  deps.activeUsers.set(caller.id, true, now);
  if (!ignoreExpiration) deps.tokens.set(token, caller, exp, now);
  return caller;
}

/**
 * Remembers the access token of a token set auth has just answered, as if verified here: auth signed
 * it, and the answer came over the authenticated transporter. Its claims are read, not verified.
 * Not kept when a `user.removed` was heard since the call began (`forgettingsAtStart`).
 */
export function rememberIssued(
  deps: Pick<BearerDeps, "tokens" | "activeUsers">,
  accessToken: unknown,
  forgettingsAtStart: number,
  now: number,
): void {
  if (typeof accessToken !== "string" || deps.activeUsers.forgettings !== forgettingsAtStart) return;
  const claims = unverifiedClaims(accessToken);
  if (claims) deps.tokens.set(accessToken, { id: claims.sub, token_id: claims.jti }, claims.exp, now);
}

function unverifiedClaims(token: string): { sub: string; jti: string; exp: number } | null {
  const [, payload] = token.split(".", 2);
  try {
    const claims: unknown = JSON.parse(Buffer.from(payload ?? "", "base64url").toString("utf8"));
    const { sub, jti, exp } = (claims ?? {}) as Record<string, unknown>;
    return typeof sub === "string" && typeof jti === "string" && typeof exp === "number"
      ? { sub, jti, exp }
      : null;
  } catch {
    return null;
  }
}
