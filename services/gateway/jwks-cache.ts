/**
 * The access tokens' public keys as the gateway knows them: auth's answer to `auth.jwks`, asked for at
 * the first token, again once it is older than MAX_AGE_MS (so a key removed from auth stops verifying
 * here within that) or once an auth process came or went (`$services.changed`: a rolling update or
 * a rotation), and again when a token names a kid not among them (a key just added at auth),
 * at most once per MIN_INTERVAL_MS: a stream of made-up kids costs auth no more than that. One request
 * at a time (single flight): every token that waits for keys waits for the same answer. When auth
 * cannot answer, the keys known stay in use and the next try waits MIN_INTERVAL_MS
 * (docs/decisions/0132-asymmetric-access-tokens.md). The gateway holds no private key.
 */
import type { KeyObject } from "node:crypto";
import type { VerificationKeys } from "../../shared/auth/access-token";
import { publicJwkOf, publicKeyOfJwk, type PublicJwk } from "../../shared/auth/jwk";
import type { JwksResult } from "../../shared/contracts/auth";

/** As long as /.well-known/jwks.json lets other verifiers keep it (Cache-Control: max-age=300). */
export const JWKS_MAX_AGE_MS = 300_000;
export const JWKS_MIN_INTERVAL_MS = 5_000;

export class JwksCache {
  private keys: VerificationKeys = { byKid: new Map(), legacy: [] };
  private published: PublicJwk[] = [];
  private legacyAtAuth = false;
  /** When auth last answered, and when it was last asked (answered or not); 0: never. */
  private fetchedAt = 0;
  private askedAt = 0;
  private inFlight: Promise<void> | null = null;

  constructor(
    private readonly fetchJwks: () => Promise<JwksResult>,
    private readonly warn: (message: string, err: unknown) => void,
    private readonly maxAgeMs = JWKS_MAX_AGE_MS,
    private readonly minIntervalMs = JWKS_MIN_INTERVAL_MS,
  ) {}

  /** The keys to judge tokens with, asked of auth first if never fetched or older than the max age. */
  async current(now: number): Promise<VerificationKeys> {
    if (this.fetchedAt === 0 || now - this.fetchedAt >= this.maxAgeMs) await this.refetch(now);
    return this.keys;
  }

  /** A kid the keys lack: auth is asked again, unless it was asked within the interval. */
  async lookup(kid: string, now: number): Promise<KeyObject | undefined> {
    const known = this.keys.byKid.get(kid);
    if (known) return known;
    await this.refetch(now);
    return this.keys.byKid.get(kid);
  }

  /** Whether auth verifies HS256 tokens of before ES256 (JWT_LEGACY_SECRETS), as it last said. */
  get legacyTokens(): boolean {
    return this.legacyAtAuth;
  }

  /** The JWKS to publish (null while auth never answered). */
  async jwks(now: number): Promise<{ keys: PublicJwk[] } | null> {
    await this.current(now);
    return this.fetchedAt === 0 ? null : { keys: this.published };
  }

  /**
   * The keys are asked for again at the next token (still used until auth answers): an auth process
   * came or went. Within MIN_INTERVAL_MS of the last request, the next one waits for its turn.
   */
  stale(): void {
    if (this.fetchedAt !== 0) this.fetchedAt = 1;
  }

  private refetch(now: number): Promise<void> {
    if (this.inFlight) return this.inFlight;
    if (this.askedAt !== 0 && now - this.askedAt < this.minIntervalMs) return Promise.resolve();
    this.askedAt = now;
    this.inFlight = this.fetchJwks()
      .then((answer) => {
        const byKid = new Map<string, KeyObject>();
        const published: PublicJwk[] = [];
        for (const jwk of answer.keys) {
          const parsed = publicKeyOfJwk(jwk);
          if (parsed) {
            byKid.set(parsed.kid, parsed.key);
            // Rebuilt from the key: only public members can ever be published.
            published.push(publicJwkOf(parsed.key));
          }
        }
        this.keys = { byKid, legacy: [] };
        this.published = published;
        this.legacyAtAuth = answer.legacy_tokens;
        this.fetchedAt = Math.max(now, 1);
      })
      .catch((err: unknown) =>
        this.warn("Fetching the token keys from auth failed; keeping the known ones.", err),
      )
      .finally(() => {
        this.inFlight = null;
      });
    return this.inFlight;
  }
}
