/**
 * Refresh tokens issued before families (decision 0003): opaque, one document each
 * (refresh-tokens.repository.ts). They keep working until they expire, with the answers of decision 0003. The first refresh of a live
 * one claims its document, as a process of the previous version would, and continues its family as a
 * family document in which that token is generation 0; from then on the family grows no more.
 */
import type { TokenSet } from "../../shared/contracts/auth";
import { decide, invalid, nextToken, reused, tokenSet, type RefreshDeps } from "./refresh-family";
import type { RefreshTokenDoc } from "./refresh-tokens.repository";
import { hashToken } from "./tokens";

/** What a claimed legacy token names as its successor once its family is continued as a document. */
export const CONTINUED_IN_FAMILY = "family";

/** Reuse of a legacy family: its documents and, if stored already, its family document are revoked. */
async function reusedLegacy(deps: RefreshDeps, doc: RefreshTokenDoc, now: Date): Promise<never> {
  await deps.legacy.revokeFamily(doc.family_id, now);
  await deps.families.revoke(doc.family_id, now);
  throw invalid("refresh token reused");
}

/**
 * Stores the family document that continues `doc` (generation 0) with a new token of generation 1.
 * Another refresh may store it first: then this one is decided against what that one stored. A reuse
 * verdict or a user's removal may have come between the claim and the insert, and found no family
 * document to revoke: the legacy document is read again, and its revocation passed on.
 */
async function continueFamily(
  deps: RefreshDeps,
  doc: RefreshTokenDoc,
  now: Date,
  retired: { rotatedAt: Date; graceUsedAt: Date | null },
  again: () => Promise<TokenSet>,
): Promise<TokenSet> {
  const { token, next } = nextToken(deps, doc.family_id, 1, now);
  const stored = await deps.families.insert({
    _id: doc.family_id,
    user_id: doc.user_id,
    generation: 1,
    current_hash: next.hash,
    parent_generation: 0,
    rotated_at: retired.rotatedAt,
    grace_used_at: retired.graceUsedAt,
    lost_generations: [],
    legacy_hash: doc._id,
    created_at: now,
    expires_at: next.expiresAt,
    revoked_at: null,
  });
  if (!stored) return again();
  const after = await deps.legacy.findByHash(doc._id);
  if (!after || after.revoked_at) {
    await deps.families.revoke(doc.family_id, now);
    throw invalid("refresh token revoked");
  }
  return tokenSet(deps, doc.user_id, token, next, now);
}

/**
 * A refresh with a token issued before families (decision 0003); `round` bounds the looks again after a
 * lost race.
 */
export async function refreshLegacy(
  deps: RefreshDeps,
  callerId: string,
  presented: string,
  now: Date,
  round = 0,
): Promise<TokenSet> {
  const hash = hashToken(presented);
  const doc = await deps.legacy.findByHash(hash);
  if (!doc) throw invalid("refresh token unknown");
  if (doc.user_id !== callerId) throw invalid("refresh token belongs to another user");
  const family = await deps.families.find(doc.family_id);
  if (doc.revoked_at || family?.revoked_at) throw invalid("refresh token revoked");
  if (new Date(doc.expires_at) <= now) throw invalid("refresh token expired");
  if (family) {
    // The family's document continues this token: it is its generation 0.
    if (family.legacy_hash === hash) return decide(deps, family, 0, hash, now);
    // It continues another token of the chain: this one was retired before that one (reuse), or is the
    // successor a grace retry of that one replaced unused (revoked).
    if (doc.rotated_at) return reused(deps, family, now);
    throw invalid("refresh token revoked");
  }
  // A lost race (a claim or an insert): look again; the second look finds the winner's write.
  const again = () =>
    round < 2
      ? refreshLegacy(deps, callerId, presented, now, round + 1)
      : Promise.reject(invalid("refresh token revoked"));

  if (!doc.rotated_at) {
    if (!(await deps.legacy.markRotated(hash, CONTINUED_IN_FAMILY, now))) return again();
    return continueFamily(deps, doc, now, { rotatedAt: now, graceUsedAt: null }, again);
  }
  const since = new Date(now.getTime() - deps.graceSeconds * 1000);
  const rotatedAt = new Date(doc.rotated_at);
  const graceOpen = deps.graceSeconds > 0 && rotatedAt >= since && !doc.grace_used_at;
  if (!graceOpen) return reusedLegacy(deps, doc, now);
  if (doc.replaced_by === CONTINUED_IN_FAMILY) {
    // Claimed, and its family not stored (yet): a concurrent refresh is storing it, or the one that
    // claimed it failed before it did (its client got no answer). Whoever stores it first rotates;
    // the other is decided against it, as the retry of the grace window.
    return continueFamily(deps, doc, now, { rotatedAt: now, graceUsedAt: null }, again);
  }
  // Rotated by the previous version, to a token with its own document: its grace retry, if that
  // successor was never used. Revoking it first also stops a process of the previous version using it.
  if (!doc.replaced_by || !(await deps.legacy.revokeIfUnused(doc.replaced_by, now))) {
    return reusedLegacy(deps, doc, now);
  }
  return continueFamily(deps, doc, now, { rotatedAt, graceUsedAt: now }, () => reusedLegacy(deps, doc, now));
}
