/**
 * Refresh tokens issued before families (decision 0003; opaque, one document each) keep working until
 * they expire, with the answers of decision 0003: operators upgrade a running system, and its clients stay
 * signed in. The first refresh of such a token continues its family as a family document.
 */
import { CONTINUED_IN_FAMILY } from "../../../../services/auth/refresh-legacy";
import { readRefreshToken } from "../../../../services/auth/refresh-token-format";
import { refreshTokens } from "../../../../services/auth/refresh";
import { sweepExpiredTokens } from "../../../../services/auth/token-sweep";
import { hashToken, newRefreshToken } from "../../../../services/auth/tokens";
import type { TokenSet } from "../../../../shared/contracts/auth";
import { TokenInvalidError } from "../../../../shared/errors";
import {
  GRACE,
  REFRESH_TTL,
  REUSED,
  REVOKED,
  closeHarnesses,
  harness,
  refusal,
  type Harness,
} from "../../../support/refresh-harness";

afterEach(closeHarnesses);

const ok = expect.objectContaining({ token_type: "Bearer" });

/** A legacy family rotated by the previous version: the first token retired in favour of a second. */
async function rotatedBeforeUpgrade(h: Harness, userId = "user-1") {
  const first = await h.legacySignIn(userId);
  const familyId = (await h.legacyDoc(first))!.family_id;
  const second = newRefreshToken();
  await h.legacy.insert({
    hash: hashToken(second),
    familyId,
    userId,
    parent: hashToken(first),
    now: h.now(),
    expiresAt: new Date(h.now().getTime() + REFRESH_TTL * 1000),
  });
  expect(await h.legacy.markRotated(hashToken(first), hashToken(second), h.now())).toBe(true);
  return { first, second, familyId };
}

describe("refresh tokens issued before families: continued", () => {
  it("when a live token of the previous version is refreshed, then it answers a token of the new format, its family continues as one document, and no token document is added", async () => {
    const h = await harness();
    const old = await h.legacySignIn("user-1");
    const familyId = (await h.legacyDoc(old))!.family_id;
    h.advance(5_000);

    const set = await refreshTokens(h.deps, "user-1", old);

    const read = readRefreshToken(h.deps.tokenKey, set.refresh_token);
    expect(read).toEqual({ kind: "family", claims: expect.objectContaining({ familyId, generation: 1 }) });
    expect(await h.family(familyId)).toMatchObject({
      user_id: "user-1",
      generation: 1,
      parent_generation: 0,
      legacy_hash: hashToken(old),
      current_hash: hashToken(set.refresh_token),
      rotated_at: h.now(),
      revoked_at: null,
    });
    expect(await h.legacyDoc(old)).toMatchObject({ rotated_at: h.now(), replaced_by: CONTINUED_IN_FAMILY });
    let token = set.refresh_token;
    for (let i = 0; i < 5; i++) token = (await refreshTokens(h.deps, "user-1", token)).refresh_token;
    expect(await h.store.collection("refresh_tokens").count({})).toBe(1);
    expect(await h.store.collection("refresh_families").count({})).toBe(1);
  });

  it("when the old token is presented again after its successor was used, then it is reuse: the family document and the old documents are revoked", async () => {
    const h = await harness();
    const old = await h.legacySignIn("user-1");
    const second = (await refreshTokens(h.deps, "user-1", old)).refresh_token;
    const third = (await refreshTokens(h.deps, "user-1", second)).refresh_token;

    expect(await refusal(refreshTokens(h.deps, "user-1", old))).toBe(REUSED);
    expect(await refusal(refreshTokens(h.deps, "user-1", third))).toBe(REVOKED);
    expect((await h.legacyDoc(old))?.revoked_at).toEqual(h.now());
  });

  it("when a retired token of the new format is reused in a continued family, then the old token is revoked with it", async () => {
    const h = await harness();
    const old = await h.legacySignIn("user-1");
    const second = (await refreshTokens(h.deps, "user-1", old)).refresh_token;
    await refreshTokens(h.deps, "user-1", second);
    h.advance((GRACE + 1) * 1000);
    expect(await refusal(refreshTokens(h.deps, "user-1", second))).toBe(REUSED);
    expect(await refusal(refreshTokens(h.deps, "user-1", old))).toBe(REVOKED);
  });

  it("when the old token is re-presented within the grace window, then it works once and the unused successor is revoked", async () => {
    const h = await harness();
    const old = await h.legacySignIn("user-1");
    const lost = (await refreshTokens(h.deps, "user-1", old)).refresh_token;
    h.advance(5_000);
    const retry = await refreshTokens(h.deps, "user-1", old);
    expect(await refusal(refreshTokens(h.deps, "user-1", lost))).toBe(REVOKED);
    await expect(refreshTokens(h.deps, "user-1", retry.refresh_token)).resolves.toEqual(ok);
    h.advance(1_000);
    expect(await refusal(refreshTokens(h.deps, "user-1", old))).toBe(REUSED);
  });

  it("when the old token is re-presented after the grace window, then it is reuse", async () => {
    const h = await harness();
    const old = await h.legacySignIn("user-1");
    const next = (await refreshTokens(h.deps, "user-1", old)).refresh_token;
    h.advance(GRACE * 1000 + 1);
    expect(await refusal(refreshTokens(h.deps, "user-1", old))).toBe(REUSED);
    expect(await refusal(refreshTokens(h.deps, "user-1", next))).toBe(REVOKED);
  });
});

describe("refresh tokens issued before families: rotated by the previous version", () => {
  it("when the live successor is refreshed after the upgrade, then it works, and presenting the retired first token then is reuse", async () => {
    const h = await harness();
    const { first, second } = await rotatedBeforeUpgrade(h);
    h.advance(60_000);
    const third = (await refreshTokens(h.deps, "user-1", second)).refresh_token;
    expect(await refusal(refreshTokens(h.deps, "user-1", first))).toBe(REUSED);
    expect(await refusal(refreshTokens(h.deps, "user-1", third))).toBe(REVOKED);
    expect(await refusal(refreshTokens(h.deps, "user-1", second))).toBe(REVOKED);
  });

  it("when the retired token is presented after the window and its successor was never refreshed, then it is reuse and the successor is revoked", async () => {
    const h = await harness();
    const { first, second } = await rotatedBeforeUpgrade(h);
    h.advance(GRACE * 1000 + 1);
    expect(await refusal(refreshTokens(h.deps, "user-1", first))).toBe(REUSED);
    expect(await refusal(refreshTokens(h.deps, "user-1", second))).toBe(REVOKED);
  });

  it("when the retired token is retried within the window and its successor was never used, then it works once and the successor is revoked", async () => {
    const h = await harness();
    const { first, second, familyId } = await rotatedBeforeUpgrade(h);
    h.advance(5_000);
    const retry = await refreshTokens(h.deps, "user-1", first);
    expect(await h.family(familyId)).toMatchObject({ legacy_hash: hashToken(first), grace_used_at: h.now() });
    expect(await refusal(refreshTokens(h.deps, "user-1", second))).toBe(REVOKED);
    const next = await refreshTokens(h.deps, "user-1", retry.refresh_token);
    expect(await refusal(refreshTokens(h.deps, "user-1", second))).toBe(REVOKED);
    expect(await refusal(refreshTokens(h.deps, "user-1", first))).toBe(REUSED);
    expect(await refusal(refreshTokens(h.deps, "user-1", next.refresh_token))).toBe(REVOKED);
  });
});

describe("refresh tokens issued before families: refusals", () => {
  it("when an old token belongs to another user, has expired, or was revoked, then the answers are those of before", async () => {
    const h = await harness();
    const owned = await h.legacySignIn("user-1");
    expect(await refusal(refreshTokens(h.deps, "user-2", owned))).toBe(
      "Token invalid: refresh token belongs to another user",
    );
    await expect(refreshTokens(h.deps, "user-1", owned)).resolves.toEqual(ok);

    const removed = await h.legacySignIn("user-3");
    await h.legacy.revokeUser("user-3", h.now());
    expect(await refusal(refreshTokens(h.deps, "user-3", removed))).toBe(REVOKED);

    const expiring = await h.legacySignIn("user-4");
    h.advance(REFRESH_TTL * 1000);
    expect(await refusal(refreshTokens(h.deps, "user-4", expiring))).toBe(
      "Token invalid: refresh token expired",
    );
    expect((await h.legacyDoc(expiring))?.rotated_at).toBeNull();
  });

  it("when the user of a continued family is removed, then both the old token and the new ones are revoked", async () => {
    const h = await harness();
    const old = await h.legacySignIn("user-1");
    const next = (await refreshTokens(h.deps, "user-1", old)).refresh_token;
    await h.legacy.revokeUser("user-1", h.now());
    await h.families.revokeUser("user-1", h.now());
    expect(await refusal(refreshTokens(h.deps, "user-1", next))).toBe(REVOKED);
    expect(await refusal(refreshTokens(h.deps, "user-1", old))).toBe(REVOKED);
  });

  it("when old tokens expired more than a day ago, then the sweep deletes their documents and they are 'unknown'", async () => {
    const h = await harness();
    const old = await h.legacySignIn("user-1");
    h.advance((REFRESH_TTL + 24 * 3600) * 1000 + 1);
    expect(await sweepExpiredTokens([h.families, h.legacy], h.now())).toBe(1);
    expect(await refusal(refreshTokens(h.deps, "user-1", old))).toBe("Token invalid: refresh token unknown");
  });
});

describe("refresh tokens issued before families: failures and races", () => {
  it("when the claim landed but the family document did not (a crash between them), then a retry within the window continues the family; after it, it is reuse", async () => {
    const h = await harness();
    const old = await h.legacySignIn("user-1");
    await h.legacy.markRotated(hashToken(old), CONTINUED_IN_FAMILY, h.now());
    h.advance(5_000);
    const retry = await refreshTokens(h.deps, "user-1", old);
    await expect(refreshTokens(h.deps, "user-1", retry.refresh_token)).resolves.toEqual(ok);

    const late = await h.legacySignIn("user-2");
    await h.legacy.markRotated(hashToken(late), CONTINUED_IN_FAMILY, h.now());
    h.advance(GRACE * 1000 + 1);
    expect(await refusal(refreshTokens(h.deps, "user-2", late))).toBe(REUSED);
  });

  it("when a reuse verdict revokes the old family between the claim and the family's insert, then the new family is revoked too and nothing works", async () => {
    const h = await harness();
    const { first, second, familyId } = await rotatedBeforeUpgrade(h);
    h.advance(GRACE * 1000 + 1);
    const families: typeof h.deps.families = {
      find: (id) => h.families.find(id),
      insert: async (doc) => {
        // The replay of the retired first token is judged, and revokes, before this insert lands.
        await expect(refreshTokens(h.deps, "user-1", first)).rejects.toThrow(REUSED);
        return h.families.insert(doc);
      },
      rotate: (...args) => h.families.rotate(...args),
      useGrace: (...args) => h.families.useGrace(...args),
      revoke: (...args) => h.families.revoke(...args),
    };
    expect(await refusal(refreshTokens({ ...h.deps, families }, "user-1", second))).toBe(REVOKED);
    expect((await h.family(familyId))?.revoked_at).not.toBeNull();
  });

  it.each([2, 3, 5])(
    "when %i refreshes of the same old token run concurrently, then at most one rotation and one grace retry succeed and the outcome is consistent",
    async (n) => {
      const h = await harness();
      const old = await h.legacySignIn("user-1");
      const familyId = (await h.legacyDoc(old))!.family_id;
      const results = await Promise.allSettled(
        Array.from({ length: n }, () => refreshTokens(h.deps, "user-1", old)),
      );
      const handedOut = results.flatMap((r) => (r.status === "fulfilled" ? [r.value.refresh_token] : []));
      const reasons = results.flatMap((r) => (r.status === "rejected" ? [r.reason as Error] : []));
      expect(handedOut.length).toBeGreaterThanOrEqual(1);
      expect(handedOut.length).toBeLessThanOrEqual(2);
      for (const reason of reasons) expect(reason).toBeInstanceOf(TokenInvalidError);
      const family = await h.family(familyId);
      const live = handedOut.filter((t) => !family?.revoked_at && family?.current_hash === hashToken(t));
      if (reasons.some((r) => r.message === REUSED)) expect(live).toEqual([]);
      else expect(live).toHaveLength(1);
      const answers: TokenSet[] = [];
      for (const token of live) answers.push(await refreshTokens(h.deps, "user-1", token));
      expect(answers).toHaveLength(live.length);
    },
  );
});
