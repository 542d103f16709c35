/**
 * The rules of decision 0003 over a family's one document (docs/decisions/0003-refresh-token-rotation.md): a genuine token of
 * the family is either the live one (rotate it), a lost one (a grace retry replaced it unused: revoked),
 * or a retired one (its grace retry, once, within the window and while its successor was never used;
 * else reuse, which revokes the family).
 */
import type { KeyObject } from "node:crypto";
import type { TokenSet } from "../../shared/contracts/auth";
import type { DeepReadonly } from "../../shared/storage";
import { TokenInvalidError } from "../../shared/errors";
import {
  LOST_GENERATIONS_KEPT,
  type NextToken,
  type RefreshFamiliesRepository,
  type RefreshFamilyDoc,
} from "./refresh-families.repository";
import type { RefreshTokensRepository } from "./refresh-tokens.repository";
import { mintRefreshToken } from "./refresh-token-format";
import { hashToken } from "./tokens";

export interface RefreshDeps {
  families: Pick<RefreshFamiliesRepository, "insert" | "find" | "rotate" | "useGrace" | "revoke">;
  /** The documents of tokens issued before families (decision 0003), one per token. */
  legacy: Pick<RefreshTokensRepository, "findByHash" | "markRotated" | "revokeIfUnused" | "revokeFamily">;
  /** The MAC key of new refresh tokens (refreshTokenKey of the first of REFRESH_TOKEN_SECRETS). */
  tokenKey: KeyObject;
  /** The MAC keys of the other REFRESH_TOKEN_SECRETS: tokens they made still verify. */
  formerTokenKeys?: readonly KeyObject[];
  /** Signs an access token for the user and returns it with its expiry (Unix seconds). */
  signAccess(userId: string, nowSeconds: number): { token: string; exp: number };
  refreshTtlSeconds: number;
  /** How long a retired token's one retry stays open (GRACE_SECONDS; 0: never). */
  graceSeconds: number;
  now(): Date;
}

/**
 * A retired refresh token may be presented once more within 30 s of its rotation: long enough for a
 * mobile client that lost the answer (a dropped connection, the app killed mid-request) to retry with
 * its client's timeouts, short enough that a stolen token replayed later is caught as reuse.
 */
export const GRACE_SECONDS = 30;

export type Family = DeepReadonly<RefreshFamilyDoc>;

export const invalid = (why: string) => new TokenInvalidError(why);

/** A token of the family's next generation, not yet handed out: what a conditional update installs. */
export function nextToken(
  deps: Pick<RefreshDeps, "tokenKey" | "refreshTtlSeconds">,
  familyId: string,
  generation: number,
  now: Date,
) {
  const expiresAt = Math.floor(now.getTime() / 1000) + deps.refreshTtlSeconds;
  const token = mintRefreshToken(deps.tokenKey, { familyId, generation, expiresAt });
  // The document keeps the expiry to the millisecond (its token, to the second): the embedded store's
  // index keeps all documents of one key in one array that each change of key copies, and a second's
  // worth of refreshes under one key made every later refresh of them cost a pass over thousands
  // (docs/decisions/0003).
  const stored = new Date(now.getTime() + deps.refreshTtlSeconds * 1000);
  const next: NextToken = { generation, hash: hashToken(token), expiresAt: stored };
  return { token, next, expiresAt };
}

/** The token set answered for a refresh token that was just installed. */
export function tokenSet(
  deps: RefreshDeps,
  userId: string,
  token: string,
  next: NextToken,
  now: Date,
): TokenSet {
  const access = deps.signAccess(userId, Math.floor(now.getTime() / 1000));
  return {
    access_token: access.token,
    expires_at: access.exp,
    refresh_token: token,
    refresh_token_expires_at: Math.floor(next.expiresAt.getTime() / 1000),
    token_type: "Bearer",
  };
}

/** Reuse: the whole family is revoked, tokens issued before families that it continues included. */
export async function reused(deps: RefreshDeps, family: Family, now: Date): Promise<never> {
  await deps.families.revoke(family._id, now);
  if (family.legacy_hash) await deps.legacy.revokeFamily(family._id, now);
  throw invalid("refresh token reused");
}

/** Whether the grace window of generation `generation` is open: it is the live token's parent, and so on. */
function graceOpen(deps: RefreshDeps, family: Family, generation: number, since: Date): boolean {
  return (
    deps.graceSeconds > 0 &&
    family.parent_generation === generation &&
    family.rotated_at !== null &&
    family.rotated_at >= since &&
    family.grace_used_at === null
  );
}

/**
 * Decides for a genuine token of `generation` whose checks (owner, revocation, expiry) passed against
 * `family`, and applies the decision with one conditional update. `presentedHash` is the token's
 * SHA-256, which must be the family's `current_hash` for the live generation.
 */
export async function decide(
  deps: RefreshDeps,
  family: Family,
  generation: number,
  presentedHash: string,
  now: Date,
): Promise<TokenSet> {
  if (generation > family.generation) throw invalid("refresh token unknown");
  if (generation === family.generation) {
    // Only the token the family installed is live; another of its generation was never handed out.
    if (presentedHash !== family.current_hash) throw invalid("refresh token unknown");
    const { token, next } = nextToken(deps, family._id, generation + 1, now);
    if (await deps.families.rotate(family._id, generation, next, now)) {
      return tokenSet(deps, family.user_id, token, next, now);
    }
    // A concurrent refresh of the same token won the rotation: look again, as the retry it now is.
    // If a grace retry of its parent replaced it instead, it is a lost token: revoked.
    const current = await deps.families.find(family._id);
    if (!current || current.revoked_at || current.lost_generations.includes(generation)) {
      throw invalid("refresh token revoked");
    }
    return decide(deps, current, generation, presentedHash, now);
  }
  // A retired token: the one retry of the grace window, or reuse.
  const since = new Date(now.getTime() - deps.graceSeconds * 1000);
  if (!graceOpen(deps, family, generation, since)) return reused(deps, family, now);
  const { token, next } = nextToken(deps, family._id, family.generation + 1, now);
  const lost = [...family.lost_generations, family.generation].slice(-LOST_GENERATIONS_KEPT);
  if (await deps.families.useGrace(family._id, family.generation, since, next, now, lost)) {
    return tokenSet(deps, family.user_id, token, next, now);
  }
  // The successor was used meanwhile, or another retry spent the window: a replay.
  return reused(deps, family, now);
}
