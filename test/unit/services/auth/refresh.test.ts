/**
 * refreshTokens: rotation, reuse detection and the grace window, over the real repositories on an
 * in-memory NeDB store (no broker), with one family document per sign-in (docs/decisions/0003). Time is
 * a fake clock the tests move by hand. Tokens issued before families (one document each) are in
 * refresh-legacy.test.ts.
 */
import type { KeyObject } from "node:crypto";
import {
  LOST_GENERATIONS_KEPT,
  type RefreshFamilyDoc,
} from "../../../../services/auth/refresh-families.repository";
import {
  readRefreshToken,
  refreshTokenKey,
  mintRefreshToken,
} from "../../../../services/auth/refresh-token-format";
import { refreshTokens } from "../../../../services/auth/refresh";
import { sweepExpiredTokens } from "../../../../services/auth/token-sweep";
import { hashToken, newRefreshToken } from "../../../../services/auth/tokens";
import type { TokenSet } from "../../../../shared/contracts/auth";
import { TokenInvalidError } from "../../../../shared/errors";
import {
  ACCESS_TTL,
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

/** The family a token of the new format names. */
function familyIdOf(h: Harness, token: string): string {
  const read = readRefreshToken(h.deps.tokenKey, token);
  if (read.kind !== "family") throw new Error(`not a genuine token: ${read.kind}`);
  return read.claims.familyId;
}

describe("refreshTokens: rotation", () => {
  it("when a live token is refreshed, then a new token set comes back and the family's one document moves to the new token", async () => {
    const h = await harness();
    const first = await h.signIn("user-1");
    const familyId = familyIdOf(h, first);
    h.advance(5_000);
    const nowSeconds = Math.floor(h.now().getTime() / 1000);

    const set = await refreshTokens(h.deps, "user-1", first);

    expect(set).toEqual<TokenSet>({
      access_token: `access:user-1:${nowSeconds}`,
      expires_at: nowSeconds + ACCESS_TTL,
      refresh_token: expect.any(String),
      refresh_token_expires_at: nowSeconds + REFRESH_TTL,
      token_type: "Bearer",
    });
    expect(set.refresh_token).not.toBe(first);
    expect(readRefreshToken(h.deps.tokenKey, set.refresh_token)).toEqual({
      kind: "family",
      claims: { familyId, generation: 1, expiresAt: nowSeconds + REFRESH_TTL },
    });
    expect(await h.family(familyId)).toEqual<RefreshFamilyDoc>({
      _id: familyId,
      user_id: "user-1",
      generation: 1,
      current_hash: hashToken(set.refresh_token),
      parent_generation: 0,
      rotated_at: h.now(),
      grace_used_at: null,
      lost_generations: [],
      legacy_hash: null,
      created_at: new Date(h.now().getTime() - 5_000),
      // to the millisecond, unlike the token's own expiry (docs/decisions/0003)
      expires_at: new Date(h.now().getTime() + REFRESH_TTL * 1000),
      revoked_at: null,
    });
  });

  it("when a sign-in is refreshed 20 times, then the store holds one document for it, and one more per further sign-in", async () => {
    const h = await harness();
    let token = await h.signIn("user-1");
    for (let i = 0; i < 20; i++) {
      h.advance(60_000);
      token = (await refreshTokens(h.deps, "user-1", token)).refresh_token;
    }
    expect(await h.store.collection("refresh_families").count({})).toBe(1);
    expect(await h.store.collection("refresh_tokens").count({})).toBe(0);
    await h.signIn("user-1");
    expect(await h.store.collection("refresh_families").count({})).toBe(2);
  });

  it("when tokens are rotated, then the store holds only the live token's hash, never a plain token", async () => {
    const h = await harness();
    const first = await h.signIn("user-1");
    const second = (await refreshTokens(h.deps, "user-1", first)).refresh_token;
    const third = (await refreshTokens(h.deps, "user-1", second)).refresh_token;

    const dump = JSON.stringify(await h.store.collection("refresh_families").find({}));
    for (const token of [first, second, third]) expect(dump).not.toContain(token);
    for (const token of [first, second]) expect(dump).not.toContain(hashToken(token));
    expect(dump).toContain(hashToken(third));
  });

  it("when the successor is refreshed in turn, then it works and the generation counts on", async () => {
    const h = await harness();
    const first = await h.signIn("user-1");
    const second = (await refreshTokens(h.deps, "user-1", first)).refresh_token;
    h.advance(60_000);
    const third = (await refreshTokens(h.deps, "user-1", second)).refresh_token;
    expect(new Set([first, second, third]).size).toBe(3);
    expect(await h.family(familyIdOf(h, first))).toMatchObject({
      generation: 2,
      parent_generation: 1,
      current_hash: hashToken(third),
    });
  });

  it("when each rotation comes later, then the lifetime slides: each new token expires REFRESH_TOKEN_TTL after its refresh", async () => {
    const h = await harness();
    let token = await h.signIn("user-1");
    for (let i = 0; i < 3; i++) {
      h.advance(10 * 24 * 3600_000); // each refresh 10 days after the last: 40 days in all
      const set = await refreshTokens(h.deps, "user-1", token);
      expect(set.refresh_token_expires_at).toBe(Math.floor(h.now().getTime() / 1000) + REFRESH_TTL);
      token = set.refresh_token;
    }
    h.advance(25 * 24 * 3600_000); // 65 days after the sign-in, 25 after the last refresh
    await expect(refreshTokens(h.deps, "user-1", token)).resolves.toEqual(ok);
  });
});

describe("refreshTokens: reuse detection", () => {
  it.each([0, 1, 2])(
    "when a chain of three refreshes is followed by reuse of the token of generation %i, then the whole family is revoked and the newest fails too",
    async (reusedGeneration) => {
      const h = await harness();
      const chain = [await h.signIn("user-1")];
      for (let i = 0; i < 3; i++) {
        h.advance(60_000);
        chain.push((await refreshTokens(h.deps, "user-1", chain[chain.length - 1])).refresh_token);
      }
      h.advance(60_000);

      expect(await refusal(refreshTokens(h.deps, "user-1", chain[reusedGeneration]))).toBe(REUSED);

      expect((await h.family(familyIdOf(h, chain[0])))?.revoked_at).toEqual(h.now());
      expect(await refusal(refreshTokens(h.deps, "user-1", chain[3]))).toBe(REVOKED);
      for (const token of chain.slice(0, 3)) {
        expect(await refusal(refreshTokens(h.deps, "user-1", token))).toBe(REVOKED);
      }
    },
  );

  it("when a token is reused, then other families of the same user stay live", async () => {
    const h = await harness();
    const phone = await h.signIn("user-1");
    const tablet = await h.signIn("user-1");
    await refreshTokens(h.deps, "user-1", phone);
    h.advance((GRACE + 1) * 1000);
    expect(await refusal(refreshTokens(h.deps, "user-1", phone))).toBe(REUSED);

    expect((await h.family(familyIdOf(h, tablet)))?.revoked_at).toBeNull();
    await expect(refreshTokens(h.deps, "user-1", tablet)).resolves.toEqual(ok);
  });

  it("when the previous token is presented after its successor was used, then it is reuse even within the grace window", async () => {
    const h = await harness();
    const first = await h.signIn("user-1");
    const second = (await refreshTokens(h.deps, "user-1", first)).refresh_token;
    h.advance(1_000);
    const third = (await refreshTokens(h.deps, "user-1", second)).refresh_token;
    h.advance(1_000);

    expect(await refusal(refreshTokens(h.deps, "user-1", first))).toBe(REUSED);
    expect(await refusal(refreshTokens(h.deps, "user-1", third))).toBe(REVOKED);
  });

  it("when the middle token of a chain is presented again within the grace window of the newest, then its used successor makes it reuse", async () => {
    const h = await harness();
    const a = await h.signIn("user-1");
    const b = (await refreshTokens(h.deps, "user-1", a)).refresh_token;
    const c = (await refreshTokens(h.deps, "user-1", b)).refresh_token;
    const d = (await refreshTokens(h.deps, "user-1", c)).refresh_token;
    expect(await refusal(refreshTokens(h.deps, "user-1", b))).toBe(REUSED);
    expect(await refusal(refreshTokens(h.deps, "user-1", d))).toBe(REVOKED);
  });
});

describe("refreshTokens: forged tokens", () => {
  /** A token of the family's format for `generation`, its MAC made with `key`. */
  function forge(h: Harness, familyId: string, generation: number, key: KeyObject) {
    return mintRefreshToken(key, {
      familyId,
      generation,
      expiresAt: Math.floor(h.now().getTime() / 1000) + REFRESH_TTL,
    });
  }

  it("when a token made up for a family's past generation is presented (a MAC of another key, or a changed byte), then it is 'unknown' and the family lives on", async () => {
    const h = await harness();
    const first = await h.signIn("user-1");
    const familyId = familyIdOf(h, first);
    const second = (await refreshTokens(h.deps, "user-1", first)).refresh_token;
    const third = (await refreshTokens(h.deps, "user-1", second)).refresh_token;
    h.advance((GRACE + 1) * 1000);

    const otherKey = refreshTokenKey("another-secret-0123456789abcdef-0123456");
    const flipped = Buffer.from(first, "base64url");
    flipped[20] ^= 1; // generation 0 becomes 1: the MAC no longer matches
    for (const forged of [
      forge(h, familyId, 0, otherKey),
      forge(h, familyId, 1, otherKey),
      flipped.toString("base64url"),
    ]) {
      expect(await refusal(refreshTokens(h.deps, "user-1", forged))).toBe(
        "Token invalid: refresh token unknown",
      );
    }
    expect((await h.family(familyId))?.revoked_at).toBeNull();
    await expect(refreshTokens(h.deps, "user-1", third)).resolves.toEqual(ok);
  });

  it("when a genuine token's generation is the live one but the token is not the one installed, then it is 'unknown' and rotates nothing", async () => {
    const h = await harness();
    const first = await h.signIn("user-1");
    const familyId = familyIdOf(h, first);
    // Made with the right key: what only someone holding the configuration could do. The random part
    // differs, so its hash is not the live token's.
    const twin = forge(h, familyId, 0, h.deps.tokenKey);
    expect(await refusal(refreshTokens(h.deps, "user-1", twin))).toBe("Token invalid: refresh token unknown");
    expect((await h.family(familyId))?.generation).toBe(0);
    await expect(refreshTokens(h.deps, "user-1", first)).resolves.toEqual(ok);
  });
});

describe("refreshTokens: grace window", () => {
  it("when the previous token is re-presented within the window, then it works once and the unused successor is revoked", async () => {
    const h = await harness();
    const first = await h.signIn("user-1");
    const familyId = familyIdOf(h, first);
    const lost = (await refreshTokens(h.deps, "user-1", first)).refresh_token;
    h.advance(5_000);

    const retry = await refreshTokens(h.deps, "user-1", first);

    expect(retry.refresh_token).not.toBe(lost);
    expect(retry.refresh_token).not.toBe(first);
    expect(await h.family(familyId)).toMatchObject({
      generation: 2,
      parent_generation: 0,
      current_hash: hashToken(retry.refresh_token),
      grace_used_at: h.now(),
      lost_generations: [1],
    });
    // The lost successor is dead; the retried one carries on.
    expect(await refusal(refreshTokens(h.deps, "user-1", lost))).toBe(REVOKED);
    const next = await refreshTokens(h.deps, "user-1", retry.refresh_token);
    // Even after the family moved on, the lost one is revoked, not a reuse.
    expect(await refusal(refreshTokens(h.deps, "user-1", lost))).toBe(REVOKED);
    await expect(refreshTokens(h.deps, "user-1", next.refresh_token)).resolves.toEqual(ok);
  });

  it("when the previous token is re-presented a second time within the window, then it is reuse and the family is revoked", async () => {
    const h = await harness();
    const first = await h.signIn("user-1");
    await refreshTokens(h.deps, "user-1", first);
    h.advance(1_000);
    const retry = (await refreshTokens(h.deps, "user-1", first)).refresh_token;
    h.advance(1_000);

    expect(await refusal(refreshTokens(h.deps, "user-1", first))).toBe(REUSED);
    expect(await refusal(refreshTokens(h.deps, "user-1", retry))).toBe(REVOKED);
  });

  it("when the previous token is re-presented exactly at the end of the window, then it still works", async () => {
    const h = await harness();
    const first = await h.signIn("user-1");
    await refreshTokens(h.deps, "user-1", first);
    h.advance(GRACE * 1000);
    await expect(refreshTokens(h.deps, "user-1", first)).resolves.toEqual(ok);
  });

  it("when the previous token is re-presented one millisecond after the window, then it is reuse and the successor is revoked", async () => {
    const h = await harness();
    const first = await h.signIn("user-1");
    const second = (await refreshTokens(h.deps, "user-1", first)).refresh_token;
    h.advance(GRACE * 1000 + 1);
    expect(await refusal(refreshTokens(h.deps, "user-1", first))).toBe(REUSED);
    expect(await refusal(refreshTokens(h.deps, "user-1", second))).toBe(REVOKED);
  });

  it("when the grace window is configured longer, then a retry later than the default window still works", async () => {
    const h = await harness({ graceSeconds: 120 });
    const first = await h.signIn("user-1");
    await refreshTokens(h.deps, "user-1", first);
    h.advance(100_000);
    await expect(refreshTokens(h.deps, "user-1", first)).resolves.toEqual(ok);
  });

  it(`when more than ${LOST_GENERATIONS_KEPT} grace retries happened in a family, then it remembers the last ${LOST_GENERATIONS_KEPT} lost generations, and an older lost token counts as reuse`, async () => {
    const h = await harness();
    let current = await h.signIn("user-1");
    const familyId = familyIdOf(h, current);
    const lostTokens: string[] = [];
    for (let i = 0; i <= LOST_GENERATIONS_KEPT; i++) {
      lostTokens.push((await refreshTokens(h.deps, "user-1", current)).refresh_token);
      current = (await refreshTokens(h.deps, "user-1", current)).refresh_token; // the grace retry
    }
    const family = await h.family(familyId);
    expect(family?.lost_generations).toHaveLength(LOST_GENERATIONS_KEPT);
    expect(await refusal(refreshTokens(h.deps, "user-1", lostTokens[1]))).toBe(REVOKED);
    expect(await refusal(refreshTokens(h.deps, "user-1", lostTokens[0]))).toBe(REUSED);
    expect(await refusal(refreshTokens(h.deps, "user-1", current))).toBe(REVOKED);
  });
});

describe("refreshTokens: grace window off", () => {
  it("when the grace window is 0, then an immediate retry of the previous token is a reuse", async () => {
    const h = await harness({ graceSeconds: 0 });
    const first = await h.signIn("user-1");
    const second = await refreshTokens(h.deps, "user-1", first);
    expect(await refusal(refreshTokens(h.deps, "user-1", first))).toBe(REUSED);
    expect(await refusal(refreshTokens(h.deps, "user-1", second.refresh_token))).toBe(REVOKED);
  });
});

describe("refreshTokens: refusals", () => {
  it("when the token was never issued, then it is 'refresh token unknown' and nothing is stored", async () => {
    const h = await harness();
    await h.signIn("user-1");
    for (const token of [newRefreshToken(), "no-such-token", ""]) {
      expect(await refusal(refreshTokens(h.deps, "user-1", token))).toBe(
        "Token invalid: refresh token unknown",
      );
    }
    expect(await h.store.collection("refresh_families").count({})).toBe(1);
    expect(await h.store.collection("refresh_tokens").count({})).toBe(0);
  });

  it("when another user presents the token, then it is refused and the token stays usable by its owner", async () => {
    const h = await harness();
    const token = await h.signIn("user-1");
    expect(await refusal(refreshTokens(h.deps, "user-2", token))).toBe(
      "Token invalid: refresh token belongs to another user",
    );
    expect((await h.family(familyIdOf(h, token)))?.generation).toBe(0);
    await expect(refreshTokens(h.deps, "user-1", token)).resolves.toEqual(ok);
  });

  it("when the token has expired, then it is 'refresh token expired' and is not rotated", async () => {
    const h = await harness();
    const token = await h.signIn("user-1");
    h.advance(REFRESH_TTL * 1000);
    expect(await refusal(refreshTokens(h.deps, "user-1", token))).toBe(
      "Token invalid: refresh token expired",
    );
    expect((await h.family(familyIdOf(h, token)))?.generation).toBe(0);
  });

  it("when the token expires one millisecond later, then it still works", async () => {
    const h = await harness();
    const token = await h.signIn("user-1");
    h.advance(REFRESH_TTL * 1000 - 1);
    await expect(refreshTokens(h.deps, "user-1", token)).resolves.toEqual(ok);
  });

  it("when a retired token has expired while its family lives on, then it is 'expired' for a day, then 'unknown', and the family is not revoked", async () => {
    const h = await harness();
    const first = await h.signIn("user-1");
    h.advance(20 * 24 * 3600_000);
    const second = (await refreshTokens(h.deps, "user-1", first)).refresh_token;
    h.advance(11 * 24 * 3600_000); // `first` expired a day ago, `second` lives 19 days more
    expect(await refusal(refreshTokens(h.deps, "user-1", first))).toBe(
      "Token invalid: refresh token expired",
    );
    h.advance(24 * 3600_000);
    expect(await refusal(refreshTokens(h.deps, "user-1", first))).toBe(
      "Token invalid: refresh token unknown",
    );
    await expect(refreshTokens(h.deps, "user-1", second)).resolves.toEqual(ok);
  });

  it("when the token was revoked (user removed), then it is 'refresh token revoked'", async () => {
    const h = await harness();
    const token = await h.signIn("user-1");
    const other = await h.signIn("user-2");
    await h.families.revokeUser("user-1", h.now());
    expect(await refusal(refreshTokens(h.deps, "user-1", token))).toBe(REVOKED);
    await expect(refreshTokens(h.deps, "user-2", other)).resolves.toEqual(ok);
  });

  it("when a revoked token that was also rotated is presented, then it is 'revoked', not reuse", async () => {
    const h = await harness();
    const token = await h.signIn("user-1");
    const next = (await refreshTokens(h.deps, "user-1", token)).refresh_token;
    await h.families.revokeUser("user-1", h.now());
    expect(await refusal(refreshTokens(h.deps, "user-1", token))).toBe(REVOKED);
    expect(await refusal(refreshTokens(h.deps, "user-1", next))).toBe(REVOKED);
  });
});

describe("refreshTokens: concurrency", () => {
  /** The handed-out tokens that still work: refreshed one by one afterwards, on a copy of nothing. */
  async function working(h: Harness, tokens: string[]): Promise<string[]> {
    const family = await h.family(familyIdOf(h, tokens[0]));
    return tokens.filter((t) => family && !family.revoked_at && family.current_hash === hashToken(t));
  }

  /**
   * The invariant of concurrent refreshes of one token: at most one rotation and one grace retry
   * succeed; when any request was answered "reused", no token of the family works any more; otherwise
   * exactly one of the handed-out tokens works.
   */
  async function expectConsistent(h: Harness, results: PromiseSettledResult<TokenSet>[]) {
    const reasons = results.flatMap((r) => (r.status === "rejected" ? [r.reason as Error] : []));
    const handedOut = results.flatMap((r) => (r.status === "fulfilled" ? [r.value.refresh_token] : []));
    expect(handedOut.length).toBeGreaterThanOrEqual(1);
    expect(handedOut.length).toBeLessThanOrEqual(2);
    for (const reason of reasons) expect(reason).toBeInstanceOf(TokenInvalidError);
    if (reasons.some((r) => r.message === REUSED)) {
      expect(await working(h, handedOut)).toEqual([]);
      for (const token of handedOut)
        expect(await refusal(refreshTokens(h.deps, "user-1", token))).toBe(REVOKED);
    } else {
      const live = await working(h, handedOut);
      expect(live).toHaveLength(1);
      await expect(refreshTokens(h.deps, "user-1", live[0])).resolves.toEqual(ok);
    }
  }

  it.each([2, 3, 5])(
    "when %i refreshes of the same token run concurrently, then at most one rotation and one grace retry succeed, and the outcome is consistent",
    async (n) => {
      const h = await harness();
      const token = await h.signIn("user-1");
      const results = await Promise.allSettled(
        Array.from({ length: n }, () => refreshTokens(h.deps, "user-1", token)),
      );
      await expectConsistent(h, results);
    },
  );

  it("when two refreshes of the same token run concurrently, then exactly one of the handed-out tokens still works", async () => {
    const h = await harness();
    const token = await h.signIn("user-1");
    const results = await Promise.allSettled([
      refreshTokens(h.deps, "user-1", token),
      refreshTokens(h.deps, "user-1", token),
    ]);
    expect(results.every((r) => r.status === "fulfilled")).toBe(true);
    await expectConsistent(h, results);
  });

  it("when the first rotation's write is slow and a concurrent refresh finishes meanwhile, then the outcome is still consistent", async () => {
    const h = await harness();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let held = false;
    const families: typeof h.deps.families = {
      insert: (doc) => h.families.insert(doc),
      find: (id) => h.families.find(id),
      // The first rotation is slow, as a remote store's may be.
      rotate: async (id, from, next, now) => {
        if (!held) {
          held = true;
          await gate;
        }
        return h.families.rotate(id, from, next, now);
      },
      useGrace: (id, from, since, next, now, lost) => h.families.useGrace(id, from, since, next, now, lost),
      revoke: (id, now) => h.families.revoke(id, now),
    };
    const deps = { ...h.deps, families };
    const token = await h.signIn("user-1");

    const first = refreshTokens(deps, "user-1", token);
    const second = refreshTokens(deps, "user-1", token);
    const settled = Promise.allSettled([first, second]);
    await new Promise((resolve) => setTimeout(resolve, 50)); // let the second one finish
    release();

    await expectConsistent(h, await settled);
  });

  it("when a live token and its parent's grace retry race, then the live one, replaced, answers 'revoked' and the retry's token works", async () => {
    const h = await harness();
    const first = await h.signIn("user-1");
    const second = (await refreshTokens(h.deps, "user-1", first)).refresh_token;
    const results = await Promise.allSettled([
      refreshTokens(h.deps, "user-1", second),
      refreshTokens(h.deps, "user-1", first),
    ]);
    const handedOut = results.flatMap((r) => (r.status === "fulfilled" ? [r.value.refresh_token] : []));
    const reasons = results.flatMap((r) => (r.status === "rejected" ? [(r.reason as Error).message] : []));
    // Whichever landed first decides: the rotation (then the retry is a reuse) or the retry (then the
    // replaced token is revoked).
    if (reasons.includes(REUSED)) expect(await working(h, handedOut)).toEqual([]);
    else {
      expect(reasons).toEqual([REVOKED]);
      expect(await working(h, handedOut)).toHaveLength(1);
    }
  });
});

describe("sweepExpiredTokens", () => {
  it("when families expired more than a day ago, a few hours ago, or not yet, then only the first are deleted, and a refresh with a just-expired one still says 'expired'", async () => {
    const h = await harness();
    const long = await h.signIn("user-1");
    h.advance(2 * 24 * 3600_000); // `long` now expires 2 days before the others
    const recent = await h.signIn("user-2");
    const live = await h.signIn("user-3");
    h.advance((REFRESH_TTL - 24 * 3600 + 3 * 3600) * 1000); // `long` expired 27 hours ago, `recent` not yet
    const rotated = await refreshTokens(h.deps, "user-3", live); // `live` rotates: its family lives on
    h.advance(24 * 3600_000); // `recent` expired 3 hours ago, `long` 51 hours ago

    expect(await sweepExpiredTokens([h.families, h.legacy], h.now())).toBe(1);

    expect(await h.family(familyIdOf(h, long))).toBeNull();
    expect(await h.family(familyIdOf(h, recent))).not.toBeNull();
    expect(await refusal(refreshTokens(h.deps, "user-2", recent))).toBe(
      "Token invalid: refresh token expired",
    );
    expect(await refusal(refreshTokens(h.deps, "user-1", long))).toBe("Token invalid: refresh token unknown");
    await expect(refreshTokens(h.deps, "user-3", rotated.refresh_token)).resolves.toEqual(ok);
  });
});
