/**
 * Refresh-token families are kept after they expire or are revoked, and so are the documents of tokens
 * issued before families (decision 0003; reuse detection needs the retired ones), but once expired they
 * can do nothing: a refresh refuses them. Without a sweep both collections, and with them every index, would
 * grow with every sign-in, forever.
 */
import type { RefreshFamiliesRepository } from "./refresh-families.repository";
import type { RefreshTokensRepository } from "./refresh-tokens.repository";

export const TOKEN_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/**
 * How long an expired token is kept: for a day it is still refused as "expired" rather than "unknown",
 * which tells a client (and whoever reads the logs) what happened.
 */
export const EXPIRED_TOKEN_KEPT_MS = 24 * 60 * 60 * 1000;

type Sweepable = Pick<RefreshFamiliesRepository | RefreshTokensRepository, "deleteExpiredBefore">;

/**
 * Deletes the families whose live token expired more than a day before `now` (with it every token of
 * the family: a retired one expired earlier still), and the documents of tokens issued before families
 * (decision 0003) that did; returns how many documents went.
 */
export async function sweepExpiredTokens(repos: Sweepable[], now: Date): Promise<number> {
  const before = new Date(now.getTime() - EXPIRED_TOKEN_KEPT_MS);
  let deleted = 0;
  for (const repo of repos) deleted += await repo.deleteExpiredBefore(before);
  return deleted;
}
