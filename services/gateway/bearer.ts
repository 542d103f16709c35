/**
 * Who a bearer token names, with as few calls to auth as the answer allows:
 * - a token this gateway verified lately is known (TokenCache);
 * - a token whose signature, algorithm and issuer check out here (the gateway reads the same JWT
 *   settings as auth), of a user auth has vouched for within AUTH_CACHE_SECONDS, is accepted without a
 *   call: it is what auth itself would answer from its own cache of active users, which lives as long
 *   and is cleared by the same `user.removed`;
 * - anything else goes to auth, whose answer is final: a token that does not verify here (expired,
 *   forged, or a gateway configured with another secret: then every token is asked, never refused
 *   here), a user not vouched for lately, or a removed one.
 * A token refresh, which accepts an expired access token, is one call (auth.refresh) instead of two.
 */
import { verifyAccessToken, type AccessClaims, type TokenConfig } from "../../shared/auth/access-token";
import type { Caller } from "../../shared/contracts/common";
import type { VerifyTokenResult } from "../../shared/contracts/auth";
import type { LocalCache } from "../../shared/runtime/local-cache";
import type { TokenCache } from "./token-cache";

export interface BearerDeps {
  tokens: TokenCache;
  /** Users auth answered for lately; the `user.removed` handler deletes from it. */
  activeUsers: LocalCache<true>;
  config: TokenConfig;
  askAuth(token: string, ignoreExpiration: boolean): Promise<VerifyTokenResult>;
}

/**
 * The `sub` a token claims, read without verifying anything: it only picks the way (verify here, or
 * ask auth), and whichever way is taken verifies. Saves verifying a user's first token twice.
 */
function claimedSubject(token: string): string | null {
  const payload = token.split(".")[1];
  if (!payload) return null;
  try {
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { sub?: unknown };
    return typeof claims?.sub === "string" ? claims.sub : null;
  } catch {
    return null;
  }
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
  const claimed = claimedSubject(token);
  const vouched = claimed !== null && deps.activeUsers.get(claimed, now) === true;
  const claims = vouched ? verifiedHere(token, deps.config, ignoreExpiration) : null;
  if (claims) {
    const caller = { id: claims.sub, token_id: claims.jti };
    if (!ignoreExpiration) deps.tokens.set(token, caller, claims.exp, now);
    return caller;
  }
  const { exp, ...caller } = await deps.askAuth(token, ignoreExpiration);
  deps.activeUsers.set(caller.id, true, now);
  if (!ignoreExpiration) deps.tokens.set(token, caller, exp, now);
  return caller;
}
