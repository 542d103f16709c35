// Tier: one process only (it writes documents into the auth store, which the cluster's processes own).
/**
 * Refresh tokens issued before families (decision 0003; one document each, as the previous version
 * stored them) keep working through the API after the upgrade, with reuse detection across the change. Embedded
 * only: the test writes such documents into the auth store, which the cluster's processes own.
 */
import { RefreshTokensRepository } from "../../services/auth/refresh-tokens.repository";
import { hashToken, newRefreshToken } from "../../services/auth/tokens";
import type { Store } from "../../shared/storage";
import { api, newUser, startSystem, type System } from "../support/system";

let sys: System;
beforeAll(async () => {
  sys = await startSystem();
});
afterAll(() => sys.stop());

const refresh = (accessToken: string, refreshToken: string) =>
  api(sys, "POST", "/auth/refresh-token", { token: accessToken, json: { refresh_token: refreshToken } });

/** A refresh token as the previous version issued it: opaque, its document in `refresh_tokens`. */
async function issuedBeforeUpgrade(userId: string): Promise<string> {
  const store = (await sys.inspect("auth")) as unknown as Store;
  const token = newRefreshToken();
  const now = new Date();
  const expires = new Date(now.getTime() + sys.config.refreshTokenTtlSeconds * 1000);
  await new RefreshTokensRepository(store).startFamily(userId, hashToken(token), now, expires);
  return token;
}

describe("refresh tokens issued before the upgrade", () => {
  it("when a client refreshes with a token of the previous version, then it gets 200 and a token that keeps rotating", async () => {
    const user = await newUser(sys.broker);
    const old = await issuedBeforeUpgrade(user.id);
    const first = await refresh(user.access_token, old);
    expect(first.status).toBe(200);
    expect(first.body.refresh_token).not.toBe(old);
    const second = await refresh(first.body.access_token, first.body.refresh_token);
    expect(second.status).toBe(200);
  });

  it("when the token of the previous version is replayed after its successor was used, then it is a reuse and the new tokens are revoked", async () => {
    const user = await newUser(sys.broker);
    const old = await issuedBeforeUpgrade(user.id);
    const first = await refresh(user.access_token, old);
    const second = await refresh(user.access_token, first.body.refresh_token);
    expect(second.status).toBe(200);
    const replay = await refresh(user.access_token, old);
    expect(replay.status).toBe(401);
    expect(replay.body).toEqual({ detail: "Token invalid: refresh token reused" });
    const newest = await refresh(user.access_token, second.body.refresh_token);
    expect(newest.body).toEqual({ detail: "Token invalid: refresh token revoked" });
  });
});
