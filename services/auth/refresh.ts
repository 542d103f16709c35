/**
 * Refresh with rotation and reuse detection (RFC 9700 §4.14 for public clients; docs/decisions/0003):
 * - every refresh returns a new refresh token and retires the one presented;
 * - presenting a retired token again revokes its whole family (every token of that sign-in);
 * - except once, within GRACE_SECONDS (30 s) of its rotation, and only while its successor was never
 *   used: a mobile client that lost the response may retry; the unused successor is revoked instead.
 * A family is one document, updated in place by each refresh; its tokens carry the family, their
 * generation and a MAC, so retired ones are recognised without being stored (docs/decisions/0003).
 */
import { randomUUID } from "node:crypto";
import type { TokenSet } from "../../shared/contracts/auth";
import { decide, invalid, nextToken, type RefreshDeps } from "./refresh-family";
import { refreshLegacy } from "./refresh-legacy";
import { hasValidMac, parseRefreshToken } from "./refresh-token-format";
import { EXPIRED_TOKEN_KEPT_MS } from "./token-sweep";
import { hashToken } from "./tokens";

export type { RefreshDeps } from "./refresh-family";

/** A sign-in: a new family, stored with its first token (generation 0), which is returned. */
export async function startFamily(
  deps: Pick<RefreshDeps, "families" | "tokenKey" | "refreshTtlSeconds">,
  userId: string,
  now: Date,
): Promise<{ token: string; expiresAt: number }> {
  const familyId = randomUUID();
  const { token, next, expiresAt } = nextToken(deps, familyId, 0, now);
  await deps.families.insert({
    _id: familyId,
    user_id: userId,
    generation: 0,
    current_hash: next.hash,
    parent_generation: null,
    rotated_at: null,
    grace_used_at: null,
    lost_generations: [],
    legacy_hash: null,
    created_at: now,
    expires_at: next.expiresAt,
    revoked_at: null,
  });
  return { token, expiresAt };
}

export async function refreshTokens(
  deps: RefreshDeps,
  callerId: string,
  presented: string,
): Promise<TokenSet> {
  const now = deps.now();
  const read = parseRefreshToken(presented);
  if (read.kind === "legacy") return refreshLegacy(deps, callerId, presented, now);
  if (read.kind === "forged") throw invalid("refresh token unknown");
  const { familyId, generation, expiresAt } = read.claims;
  const family = await deps.families.find(familyId);
  const hash = hashToken(presented);
  // The live token is known by its hash; any other must carry a valid MAC before its claims count.
  // Without one it is refused as never issued, and touches no family.
  if (
    family?.current_hash !== hash &&
    !hasValidMac([deps.tokenKey, ...(deps.formerTokenKeys ?? [])], presented)
  ) {
    throw invalid("refresh token unknown");
  }
  // A day after its expiry a token answers as when each token's document was deleted then (decision 0003).
  if (expiresAt * 1000 + EXPIRED_TOKEN_KEPT_MS < now.getTime()) throw invalid("refresh token unknown");
  if (!family) throw invalid("refresh token unknown");
  if (family.user_id !== callerId) throw invalid("refresh token belongs to another user");
  if (family.revoked_at || family.lost_generations.includes(generation)) {
    throw invalid("refresh token revoked");
  }
  if (expiresAt * 1000 <= now.getTime()) throw invalid("refresh token expired");
  return decide(deps, family, generation, hash, now);
}
