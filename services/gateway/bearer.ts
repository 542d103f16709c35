/**
 * Who a bearer token names, with as few calls as the answer allows:
 * - a token this gateway verified lately is known (TokenCache);
 * - a token whose signature, algorithm, issuer and expiry check out here (the gateway reads the same
 *   JWT settings as auth) is accepted for a user active within AUTH_CACHE_SECONDS, without a call; for
 *   any other user, users is asked whether the user exists and is not removed (`users.status`), the
 *   very check auth would make after the same verification (decision 0112);
 * - anything that does not verify here goes to auth, whose answer is final: expired, forged, or a
 *   gateway configured with another secret (then every token is asked, never refused here). So does
 *   every token when AUTH_CACHE_SECONDS is 0 (the gateway remembers nothing and leaves it all to auth).
 * `activeUsers` lives as long as auth's own and is cleared by the same `user.removed`. What was learnt
 * by a call that a removal overtook (`user.removed` heard while it was in flight) is not remembered.
 * A token refresh, which accepts an expired access token, is one call (auth.refresh) instead of two.
 */
import { verifyAccessToken, type AccessClaims, type TokenConfig } from "../../shared/auth/access-token";
import type { Caller } from "../../shared/contracts/common";
import type { VerifyTokenResult } from "../../shared/contracts/auth";
import { UserRemovedError } from "../../shared/errors";
import type { LocalCache } from "../../shared/runtime/local-cache";
import type { TokenCache } from "./token-cache";

export interface BearerDeps {
  tokens: TokenCache;
  /** Users found active lately (by users or auth); the `user.removed` handler deletes from it. */
  activeUsers: LocalCache<true>;
  config: TokenConfig;
  askAuth(token: string, ignoreExpiration: boolean): Promise<VerifyTokenResult>;
  /** `users.status`: whether the user exists and has not been removed. */
  isActive(userId: string): Promise<boolean>;
}

function verifiedHere(token: string, config: TokenConfig, ignoreExpiration: boolean): AccessClaims | null {
  try {
    return verifyAccessToken(token, config, { ignoreExpiration });
  } catch {
    return null;
  }
}

export async function callerOfBearer(
  deps: BearerDeps,
  token: string,
  ignoreExpiration: boolean,
  now: number,
): Promise<Caller> {
  const known = ignoreExpiration ? null : deps.tokens.get(token, now);
  if (known) return known;
  const forgettings = deps.activeUsers.forgettings;
  const noRemovalSince = () => deps.activeUsers.forgettings === forgettings;
  const claims = deps.activeUsers.enabled ? verifiedHere(token, deps.config, ignoreExpiration) : null;
  if (claims) {
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
