/**
 * refreshTokens: rotation, reuse detection and the grace window, over the real repository on an in-memory
 * NeDB store (no broker). Time is a fake clock the tests move by hand.
 */
import { refreshTokens, type RefreshDeps } from "../../services/auth/refresh";
import { sweepExpiredTokens } from "../../services/auth/token-sweep";
import { RefreshTokensRepository, type RefreshTokenDoc } from "../../services/auth/refresh-tokens.repository";
import { hashToken, newRefreshToken } from "../../services/auth/tokens";
import type { TokenSet } from "../../shared/contracts/auth";
import { ErrorType, TokenInvalidError } from "../../shared/errors";
import { NedbStore } from "../../shared/storage";

const T0 = new Date("2030-01-01T12:00:00.000Z");
const GRACE = 30;
const REFRESH_TTL = 30 * 24 * 3600;
const ACCESS_TTL = 900;

interface Harness {
  deps: RefreshDeps;
  repo: RefreshTokensRepository;
  store: NedbStore;
  /** Moves the fake clock forward. */
  advance(ms: number): void;
  now(): Date;
  /** A new sign-in for the user: the plain refresh token of a new family. */
  signIn(userId: string): Promise<string>;
  doc(token: string): Promise<RefreshTokenDoc | null>;
  /** Every stored token of the family, as stored. */
  family(familyId: string): Promise<RefreshTokenDoc[]>;
}

let open: NedbStore[] = [];

async function harness(overrides: Partial<Omit<RefreshDeps, "repo" | "now">> = {}): Promise<Harness> {
  const store = new NedbStore(null);
  open.push(store);
  const repo = new RefreshTokensRepository(store);
  await repo.init();
  let clock = T0.getTime();
  const deps: RefreshDeps = {
    repo,
    signAccess: (userId, nowSeconds) => ({
      token: `access:${userId}:${nowSeconds}`,
      exp: nowSeconds + ACCESS_TTL,
    }),
    refreshTtlSeconds: REFRESH_TTL,
    graceSeconds: GRACE,
    now: () => new Date(clock),
    ...overrides,
  };
  return {
    deps,
    repo,
    store,
    advance: (ms) => {
      clock += ms;
    },
    now: () => new Date(clock),
    async signIn(userId) {
      const token = newRefreshToken();
      await repo.startFamily(userId, hashToken(token), new Date(clock), new Date(clock + REFRESH_TTL * 1000));
      return token;
    },
    doc: (token) => repo.findByHash(hashToken(token)),
    family: (familyId) =>
      store.collection<RefreshTokenDoc>("refresh_tokens").find({ family_id: familyId }, { sort: { _id: 1 } }),
  };
}

afterEach(async () => {
  await Promise.all(open.map((s) => s.close()));
  open = [];
});

/** The refusal's message, after checking it is a TokenInvalidError answered with 401. */
async function refusal(promise: Promise<unknown>): Promise<string> {
  let caught: unknown;
  try {
    await promise;
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(TokenInvalidError);
  expect(caught).toMatchObject({ code: 401, type: ErrorType.TOKEN_INVALID });
  return (caught as Error).message;
}

const REUSED = "Token invalid: refresh token reused";
const REVOKED = "Token invalid: refresh token revoked";

describe("refreshTokens: rotation", () => {
  it("when a live token is refreshed, then a new token set comes back and the old token is rotated to the new one", async () => {
    const h = await harness();
    const first = await h.signIn("user-1");
    const before = await h.doc(first);
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
    expect(set.refresh_token.length).toBeGreaterThanOrEqual(43);

    const old = await h.doc(first);
    expect(old?.rotated_at).toEqual(h.now());
    expect(old?.replaced_by).toBe(hashToken(set.refresh_token));
    expect(old?.revoked_at).toBeNull();

    const successor = await h.doc(set.refresh_token);
    expect(successor).toMatchObject({
      _id: hashToken(set.refresh_token),
      family_id: before?.family_id,
      user_id: "user-1",
      parent: hashToken(first),
      rotated_at: null,
      replaced_by: null,
      grace_used_at: null,
      revoked_at: null,
    });
    expect(successor?.created_at).toEqual(h.now());
    expect(successor?.expires_at).toEqual(new Date((nowSeconds + REFRESH_TTL) * 1000));
  });

  it("when tokens are rotated, then the store holds only their hashes, never a plain token", async () => {
    const h = await harness();
    const first = await h.signIn("user-1");
    const second = (await refreshTokens(h.deps, "user-1", first)).refresh_token;
    const third = (await refreshTokens(h.deps, "user-1", second)).refresh_token;

    const all = await h.store.collection<RefreshTokenDoc>("refresh_tokens").find({});
    const dump = JSON.stringify(all);
    expect(all).toHaveLength(3);
    for (const token of [first, second, third]) {
      expect(dump).not.toContain(token);
      expect(dump).toContain(hashToken(token));
    }
  });

  it("when the successor is refreshed in turn, then it works and names its own successor", async () => {
    const h = await harness();
    const first = await h.signIn("user-1");
    const second = (await refreshTokens(h.deps, "user-1", first)).refresh_token;
    h.advance(60_000);
    const third = (await refreshTokens(h.deps, "user-1", second)).refresh_token;
    expect(new Set([first, second, third]).size).toBe(3);
    expect((await h.doc(second))?.replaced_by).toBe(hashToken(third));
    expect((await h.doc(third))?.parent).toBe(hashToken(second));
  });
});

describe("refreshTokens: reuse detection", () => {
  it("when a chain of three refreshes is followed by reuse of the first token, then the whole family is revoked and the newest fails too", async () => {
    const h = await harness();
    const t0 = await h.signIn("user-1");
    const familyId = (await h.doc(t0))!.family_id;
    const chain = [t0];
    for (let i = 0; i < 3; i++) {
      h.advance(60_000);
      chain.push((await refreshTokens(h.deps, "user-1", chain[chain.length - 1])).refresh_token);
    }
    h.advance(60_000);

    expect(await refusal(refreshTokens(h.deps, "user-1", chain[0]))).toBe(REUSED);

    const family = await h.family(familyId);
    expect(family).toHaveLength(4);
    for (const doc of family) expect(doc.revoked_at).toEqual(h.now());
    expect(await refusal(refreshTokens(h.deps, "user-1", chain[3]))).toBe(REVOKED);
  });

  it("when a token is reused, then other families of the same user stay live", async () => {
    const h = await harness();
    const phone = await h.signIn("user-1");
    const tablet = await h.signIn("user-1");
    await refreshTokens(h.deps, "user-1", phone);
    h.advance((GRACE + 1) * 1000);
    expect(await refusal(refreshTokens(h.deps, "user-1", phone))).toBe(REUSED);

    expect((await h.doc(tablet))?.revoked_at).toBeNull();
    await expect(refreshTokens(h.deps, "user-1", tablet)).resolves.toMatchObject({ token_type: "Bearer" });
  });

  it("when the previous token is presented after its successor was used, then it is reuse even within the grace window", async () => {
    const h = await harness();
    const first = await h.signIn("user-1");
    const second = (await refreshTokens(h.deps, "user-1", first)).refresh_token;
    h.advance(1_000);
    const third = (await refreshTokens(h.deps, "user-1", second)).refresh_token;
    h.advance(1_000);

    expect(await refusal(refreshTokens(h.deps, "user-1", first))).toBe(REUSED);
    expect((await h.doc(third))?.revoked_at).toEqual(h.now());
    expect(await refusal(refreshTokens(h.deps, "user-1", third))).toBe(REVOKED);
  });

  it("when the middle token of a chain is presented again within the grace window of the newest, then its used successor makes it reuse", async () => {
    const h = await harness();
    const a = await h.signIn("user-1");
    const b = (await refreshTokens(h.deps, "user-1", a)).refresh_token;
    const c = (await refreshTokens(h.deps, "user-1", b)).refresh_token;
    await refreshTokens(h.deps, "user-1", c);
    expect(await refusal(refreshTokens(h.deps, "user-1", b))).toBe(REUSED);
    expect((await h.doc(c))?.revoked_at).not.toBeNull();
  });
});

describe("refreshTokens: grace window", () => {
  it("when the previous token is re-presented within the window, then it works once and the unused successor is revoked", async () => {
    const h = await harness();
    const first = await h.signIn("user-1");
    const lost = (await refreshTokens(h.deps, "user-1", first)).refresh_token;
    h.advance(5_000);

    const retry = await refreshTokens(h.deps, "user-1", first);

    expect(retry.token_type).toBe("Bearer");
    expect(retry.refresh_token).not.toBe(lost);
    expect(retry.refresh_token).not.toBe(first);
    expect((await h.doc(lost))?.revoked_at).toEqual(h.now());
    const firstDoc = await h.doc(first);
    expect(firstDoc?.grace_used_at).toEqual(h.now());
    expect(firstDoc?.replaced_by).toBe(hashToken(retry.refresh_token));
    expect((await h.doc(retry.refresh_token))?.parent).toBe(hashToken(first));

    // The lost successor is dead; the retried one carries on.
    expect(await refusal(refreshTokens(h.deps, "user-1", lost))).toBe(REVOKED);
    await expect(refreshTokens(h.deps, "user-1", retry.refresh_token)).resolves.toMatchObject({
      token_type: "Bearer",
    });
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
    await expect(refreshTokens(h.deps, "user-1", first)).resolves.toMatchObject({ token_type: "Bearer" });
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
    await expect(refreshTokens(h.deps, "user-1", first)).resolves.toMatchObject({ token_type: "Bearer" });
  });
});

describe("refreshTokens: grace window off", () => {
  it("when REFRESH_GRACE_SECONDS is 0, then an immediate retry of the previous token is a reuse", async () => {
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
    expect(await refusal(refreshTokens(h.deps, "user-1", newRefreshToken()))).toBe(
      "Token invalid: refresh token unknown",
    );
    expect(await h.store.collection("refresh_tokens").count({})).toBe(1);
  });

  it("when another user presents the token, then it is refused and the token stays usable by its owner", async () => {
    const h = await harness();
    const token = await h.signIn("user-1");
    expect(await refusal(refreshTokens(h.deps, "user-2", token))).toBe(
      "Token invalid: refresh token belongs to another user",
    );
    expect((await h.doc(token))?.rotated_at).toBeNull();
    await expect(refreshTokens(h.deps, "user-1", token)).resolves.toMatchObject({ token_type: "Bearer" });
  });

  it("when the token has expired, then it is 'refresh token expired' and is not rotated", async () => {
    const h = await harness();
    const token = await h.signIn("user-1");
    h.advance(REFRESH_TTL * 1000);
    expect(await refusal(refreshTokens(h.deps, "user-1", token))).toBe(
      "Token invalid: refresh token expired",
    );
    expect((await h.doc(token))?.rotated_at).toBeNull();
  });

  it("when the token expires one millisecond later, then it still works", async () => {
    const h = await harness();
    const token = await h.signIn("user-1");
    h.advance(REFRESH_TTL * 1000 - 1);
    await expect(refreshTokens(h.deps, "user-1", token)).resolves.toMatchObject({ token_type: "Bearer" });
  });

  it("when the token was revoked (user removed), then it is 'refresh token revoked'", async () => {
    const h = await harness();
    const token = await h.signIn("user-1");
    await h.repo.revokeUser("user-1", h.now());
    expect(await refusal(refreshTokens(h.deps, "user-1", token))).toBe(REVOKED);
  });

  it("when a revoked token that was also rotated is presented, then it is 'revoked', not reuse", async () => {
    const h = await harness();
    const token = await h.signIn("user-1");
    const next = (await refreshTokens(h.deps, "user-1", token)).refresh_token;
    await h.repo.revokeUser("user-1", h.now());
    expect(await refusal(refreshTokens(h.deps, "user-1", token))).toBe(REVOKED);
    expect(await refusal(refreshTokens(h.deps, "user-1", next))).toBe(REVOKED);
  });
});

describe("refreshTokens: concurrency", () => {
  /** The live (neither revoked nor rotated) tokens of the family. */
  const live = (docs: RefreshTokenDoc[]) =>
    docs.filter((d) => d.revoked_at === null && d.rotated_at === null);

  it.each([2, 5])(
    "when %i refreshes of the same token run concurrently, then at most one rotation and one grace retry succeed and at most one successor stays live",
    async (n) => {
      const h = await harness();
      const token = await h.signIn("user-1");
      const familyId = (await h.doc(token))!.family_id;

      const results = await Promise.allSettled(
        Array.from({ length: n }, () => refreshTokens(h.deps, "user-1", token)),
      );

      const ok = results.filter((r): r is PromiseFulfilledResult<TokenSet> => r.status === "fulfilled");
      expect(ok.length).toBeGreaterThanOrEqual(1);
      expect(ok.length).toBeLessThanOrEqual(2);
      for (const r of results) {
        if (r.status === "rejected") {
          expect(r.reason).toBeInstanceOf(TokenInvalidError);
          expect(r.reason).toMatchObject({ code: 401 });
        }
      }

      const family = await h.family(familyId);
      const successors = family.filter((d) => d.parent === hashToken(token));
      // Every success stored its successor; of all successors, at most one was left unrevoked.
      for (const r of ok) expect(successors.map((d) => d._id)).toContain(hashToken(r.value.refresh_token));
      expect(successors.filter((d) => d.revoked_at === null).length).toBeLessThanOrEqual(1);
      expect(live(family).length).toBeLessThanOrEqual(1);
      const liveTokens = ok
        .map((r) => r.value.refresh_token)
        .filter((t) => live(family).some((d) => d._id === hashToken(t)));
      expect(liveTokens.length).toBeLessThanOrEqual(1);
    },
  );

  it("when two refreshes of the same token run concurrently, then exactly one of the handed-out tokens still works", async () => {
    const h = await harness();
    const token = await h.signIn("user-1");
    const results = await Promise.allSettled([
      refreshTokens(h.deps, "user-1", token),
      refreshTokens(h.deps, "user-1", token),
    ]);
    const ok = results.filter((r): r is PromiseFulfilledResult<TokenSet> => r.status === "fulfilled");
    const working = [];
    for (const r of ok) {
      const doc = await h.doc(r.value.refresh_token);
      if (doc?.revoked_at === null) working.push(r.value.refresh_token);
    }
    expect(working).toHaveLength(1);
    await expect(refreshTokens(h.deps, "user-1", working[0])).resolves.toMatchObject({
      token_type: "Bearer",
    });
  });
});

/**
 * Known bug (see the report of the unit-test pass for issue 3): a successor is stored only after the
 * conditional update that hands it out, so a concurrent reuse verdict can revoke the family first and the
 * successor then lands live in a revoked family. These cases state the intended invariant and are marked
 * `failing` until the fix lands; jest then reports them, and they become plain `it`.
 */
describe("refreshTokens: reuse verdict under concurrency", () => {
  /**
   * The invariant of concurrent refreshes of one token: when any request was answered "reused", no token
   * of the family works any more; otherwise at most one of the handed-out tokens works.
   */
  async function expectConsistent(h: Harness, familyId: string, results: PromiseSettledResult<TokenSet>[]) {
    const reasons = results.flatMap((r) => (r.status === "rejected" ? [(r.reason as Error).message] : []));
    const handedOut = results.flatMap((r) => (r.status === "fulfilled" ? [r.value.refresh_token] : []));
    const family = await h.family(familyId);
    if (reasons.includes(REUSED)) {
      expect(family.filter((d) => d.revoked_at === null)).toEqual([]);
      for (const token of handedOut)
        expect(await refusal(refreshTokens(h.deps, "user-1", token))).toBe(REVOKED);
    } else {
      const working = [];
      for (const token of handedOut) {
        if ((await h.doc(token))?.revoked_at === null) working.push(token);
      }
      expect(working.length).toBeLessThanOrEqual(1);
    }
  }

  it.each([3, 5])(
    "when %i refreshes of the same token run concurrently and one is judged reuse, then no token of the family works afterwards",
    async (n) => {
      const h = await harness();
      const token = await h.signIn("user-1");
      const familyId = (await h.doc(token))!.family_id;

      const results = await Promise.allSettled(
        Array.from({ length: n }, () => refreshTokens(h.deps, "user-1", token)),
      );

      await expectConsistent(h, familyId, results);
    },
  );

  it("when the first rotation stores its successor slowly and a concurrent refresh finishes meanwhile, then the outcome is still consistent", async () => {
    const h = await harness();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let held = false;
    const repo: RefreshDeps["repo"] = {
      findByHash: (hash) => h.repo.findByHash(hash),
      markRotated: (hash, successor, now) => h.repo.markRotated(hash, successor, now),
      useGrace: (hash, successor, since, now) => h.repo.useGrace(hash, successor, since, now),
      revokeIfUnused: (hash, now) => h.repo.revokeIfUnused(hash, now),
      revokeFamily: (familyId, now) => h.repo.revokeFamily(familyId, now),
      // The first insert is slow, as a remote store's may be.
      insert: async (t) => {
        if (!held) {
          held = true;
          await gate;
        }
        return h.repo.insert(t);
      },
    };
    const deps = { ...h.deps, repo };
    const token = await h.signIn("user-1");
    const familyId = (await h.doc(token))!.family_id;

    const first = refreshTokens(deps, "user-1", token);
    const second = refreshTokens(deps, "user-1", token);
    const settled = Promise.allSettled([first, second]);
    await new Promise((resolve) => setTimeout(resolve, 50)); // let the second one finish
    release();

    await expectConsistent(h, familyId, await settled);
  });
});

describe("sweepExpiredTokens", () => {
  it("when tokens expired more than a day ago, a few hours ago, or not yet, then only the first are deleted, and a refresh with a just-expired one still says 'expired'", async () => {
    const h = await harness();
    const long = await h.signIn("user-1");
    h.advance(2 * 24 * 3600_000); // `long` now expires 2 days before the others
    const recent = await h.signIn("user-2");
    const live = await h.signIn("user-3");
    const liveFamily = (await h.doc(live))?.family_id as string;
    h.advance((REFRESH_TTL - 24 * 3600 + 3 * 3600) * 1000); // `long` expired 27 hours ago, `recent` not yet
    const rotated = await refreshTokens(h.deps, "user-3", live); // `live` rotates: its successor lives on
    h.advance(24 * 3600_000); // `recent` expired 3 hours ago, `long` 51 hours ago

    expect(await sweepExpiredTokens(h.repo, h.now())).toBe(1);

    expect(await h.doc(long)).toBeNull();
    expect(await h.doc(recent)).not.toBeNull();
    expect(await refusal(refreshTokens(h.deps, "user-2", recent))).toBe(
      "Token invalid: refresh token expired",
    );
    expect(await refusal(refreshTokens(h.deps, "user-1", long))).toBe("Token invalid: refresh token unknown");
    expect((await h.family(liveFamily)).length).toBe(2);
    await expect(refreshTokens(h.deps, "user-3", rotated.refresh_token)).resolves.toMatchObject({
      token_type: "Bearer",
    });
  });
});
