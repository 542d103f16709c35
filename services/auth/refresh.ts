/**
 * Refresh with rotation and reuse detection (RFC 9700 §4.14 for public clients):
 * - every refresh returns a new refresh token and retires the one presented;
 * - presenting a retired token again revokes its whole family (every token of that sign-in);
 * - except once, within REFRESH_GRACE_SECONDS of its rotation, and only while its successor was never
 *   used: a mobile client that lost the response may retry; the unused successor is revoked instead.
 */
import type { TokenSet } from "../../shared/contracts/auth";
import { TokenInvalidError } from "../../shared/errors";
import type { RefreshTokenDoc, RefreshTokensRepository } from "./refresh-tokens.repository";
import { hashToken, newRefreshToken } from "./tokens";

export interface RefreshDeps {
  repo: Pick<
    RefreshTokensRepository,
    "findByHash" | "markRotated" | "useGrace" | "revokeIfUnused" | "revokeFamily" | "insert"
  >;
  /** Signs an access token for the user and returns it with its expiry (Unix seconds). */
  signAccess(userId: string, nowSeconds: number): { token: string; exp: number };
  refreshTtlSeconds: number;
  graceSeconds: number;
  now(): Date;
}

const invalid = (why: string) => new TokenInvalidError(why);

async function reused(deps: RefreshDeps, doc: RefreshTokenDoc, now: Date): Promise<never> {
  await deps.repo.revokeFamily(doc.family_id, now);
  throw invalid("refresh token reused");
}

/**
 * Stores a successor first, then lets `claim` retire the presented token in favour of it. Storing first
 * matters: a concurrent request that decides "reused" revokes the whole family, and a successor stored
 * after that would escape the revocation. A successor whose claim fails is revoked at once.
 */
async function rotate(
  deps: RefreshDeps,
  doc: RefreshTokenDoc,
  now: Date,
  claim: (successorHash: string) => Promise<boolean>,
): Promise<TokenSet | null> {
  const token = newRefreshToken();
  const hash = hashToken(token);
  const nowSeconds = Math.floor(now.getTime() / 1000);
  const refreshExp = nowSeconds + deps.refreshTtlSeconds;
  await deps.repo.insert({
    hash,
    familyId: doc.family_id,
    userId: doc.user_id,
    parent: doc._id,
    now,
    expiresAt: new Date(refreshExp * 1000),
  });
  if (!(await claim(hash))) {
    await deps.repo.revokeIfUnused(hash, now);
    return null;
  }
  const access = deps.signAccess(doc.user_id, nowSeconds);
  return {
    access_token: access.token,
    expires_at: access.exp,
    refresh_token: token,
    refresh_token_expires_at: refreshExp,
    token_type: "Bearer",
  };
}

/** The grace path: the presented token was rotated already. */
async function retryWithinGrace(deps: RefreshDeps, doc: RefreshTokenDoc, now: Date): Promise<TokenSet> {
  const since = new Date(now.getTime() - deps.graceSeconds * 1000);
  const rotatedAt = doc.rotated_at ? new Date(doc.rotated_at) : null;
  const eligible =
    deps.graceSeconds > 0 && rotatedAt && rotatedAt >= since && !doc.grace_used_at && doc.replaced_by;
  if (!eligible) return reused(deps, doc, now);
  const previousSuccessor = doc.replaced_by as string;
  const set = await rotate(deps, doc, now, async (hash) => {
    // The successor must never have been used: if it was, the client has it, and this is a replay.
    if (!(await deps.repo.revokeIfUnused(previousSuccessor, now))) return false;
    return deps.repo.useGrace(doc._id, hash, since, now);
  });
  return set ?? reused(deps, doc, now);
}

export async function refreshTokens(
  deps: RefreshDeps,
  callerId: string,
  presented: string,
): Promise<TokenSet> {
  const now = deps.now();
  const doc = await deps.repo.findByHash(hashToken(presented));
  if (!doc) throw invalid("refresh token unknown");
  if (doc.user_id !== callerId) throw invalid("refresh token belongs to another user");
  if (doc.revoked_at) throw invalid("refresh token revoked");
  if (new Date(doc.expires_at) <= now) throw invalid("refresh token expired");
  if (doc.rotated_at) return retryWithinGrace(deps, doc, now);

  const set = await rotate(deps, doc, now, (hash) => deps.repo.markRotated(doc._id, hash, now));
  if (set) return set;
  // A concurrent refresh of the same token won the rotation: look again and take the grace path.
  const current = await deps.repo.findByHash(doc._id);
  if (!current || current.revoked_at) throw invalid("refresh token revoked");
  return retryWithinGrace(deps, current, now);
}
