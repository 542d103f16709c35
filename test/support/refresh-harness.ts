/**
 * refreshTokens without a broker: the real repositories on an in-memory NeDB store, an access token
 * that is only a label, and a fake clock the tests move by hand.
 */
import type { RefreshDeps } from "../../services/auth/refresh";
import { startFamily } from "../../services/auth/refresh";
import {
  RefreshFamiliesRepository,
  type RefreshFamilyDoc,
} from "../../services/auth/refresh-families.repository";
import { refreshTokenKey } from "../../services/auth/refresh-token-format";
import { RefreshTokensRepository, type RefreshTokenDoc } from "../../services/auth/refresh-tokens.repository";
import { hashToken, newRefreshToken } from "../../services/auth/tokens";
import { ErrorType, TokenInvalidError } from "../../shared/errors";
import { NedbStore } from "../../shared/storage";

export const T0 = new Date("2030-01-01T12:00:00.000Z");
export const GRACE = 30;
export const REFRESH_TTL = 30 * 24 * 3600;
export const ACCESS_TTL = 900;
export const REUSED = "Token invalid: refresh token reused";
export const REVOKED = "Token invalid: refresh token revoked";

export interface Harness {
  deps: RefreshDeps;
  families: RefreshFamiliesRepository;
  /** The documents of tokens issued before families (decision 0003). */
  legacy: RefreshTokensRepository;
  store: NedbStore;
  /** Moves the fake clock forward. */
  advance(ms: number): void;
  now(): Date;
  /** A new sign-in for the user: the refresh token of a new family. */
  signIn(userId: string): Promise<string>;
  /** A sign-in as the previous version stored it: an opaque token with a document of its own. */
  legacySignIn(userId: string): Promise<string>;
  family(familyId: string): Promise<RefreshFamilyDoc | null>;
  legacyDoc(token: string): Promise<RefreshTokenDoc | null>;
}

let open: NedbStore[] = [];

export async function harness(overrides: Partial<Omit<RefreshDeps, "families" | "legacy" | "now">> = {}) {
  const store = new NedbStore(null);
  open.push(store);
  const families = new RefreshFamiliesRepository(store);
  const legacy = new RefreshTokensRepository(store);
  await families.init();
  await legacy.init();
  let clock = T0.getTime();
  const deps: RefreshDeps = {
    families,
    legacy,
    tokenKey: refreshTokenKey("unit-test-secret-0123456789abcdef-0123"),
    signAccess: (userId, nowSeconds) => ({
      token: `access:${userId}:${nowSeconds}`,
      exp: nowSeconds + ACCESS_TTL,
    }),
    refreshTtlSeconds: REFRESH_TTL,
    graceSeconds: GRACE,
    now: () => new Date(clock),
    ...overrides,
  };
  const h: Harness = {
    deps,
    families,
    legacy,
    store,
    advance: (ms) => {
      clock += ms;
    },
    now: () => new Date(clock),
    signIn: async (userId) => (await startFamily(deps, userId, new Date(clock))).token,
    async legacySignIn(userId) {
      const token = newRefreshToken();
      await legacy.startFamily(
        userId,
        hashToken(token),
        new Date(clock),
        new Date(clock + REFRESH_TTL * 1000),
      );
      return token;
    },
    family: (familyId) => store.collection<RefreshFamilyDoc>("refresh_families").findOne({ _id: familyId }),
    legacyDoc: (token) => legacy.findByHash(hashToken(token)),
  };
  return h;
}

export async function closeHarnesses(): Promise<void> {
  await Promise.all(open.map((s) => s.close()));
  open = [];
}

/** The refusal's message, after checking it is a TokenInvalidError answered with 401. */
export async function refusal(promise: Promise<unknown>): Promise<string> {
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
