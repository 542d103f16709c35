/**
 * Refresh tokens are kept after they expire, rotate or are revoked (reuse detection needs the retired
 * ones), but once expired they can do nothing: a refresh refuses them. Without a sweep the collection,
 * and with it every index, grows by one document per sign-in and per refresh, forever.
 */
import type { RefreshTokensRepository } from "./refresh-tokens.repository";

export const TOKEN_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/**
 * How long an expired token is kept: for a day it is still refused as "expired" rather than "unknown",
 * which tells a client (and whoever reads the logs) what happened.
 */
export const EXPIRED_TOKEN_KEPT_MS = 24 * 60 * 60 * 1000;

/** Deletes the tokens that expired more than a day before `now`; returns how many. */
export function sweepExpiredTokens(
  repo: Pick<RefreshTokensRepository, "deleteExpiredBefore">,
  now: Date,
): Promise<number> {
  return repo.deleteExpiredBefore(new Date(now.getTime() - EXPIRED_TOKEN_KEPT_MS));
}
