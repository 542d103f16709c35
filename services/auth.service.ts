/**
 * auth: verifies access tokens and API keys for the gateway, publishes the access tokens' public keys
 * (`auth.jwks`, served at /.well-known/jwks.json), issues token sets, refreshes them with
 * rotation and reuse detection, and manages API keys (stored hashed, with a scope).
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import { ReadinessMixin } from "../shared/runtime/readiness";
import { call, Events, type ParamsOf, type ResultOf } from "../shared/contracts";
import {
  CreateApiKeyParams,
  IssueTokensParams,
  RefreshParams,
  RevokeApiKeyParams,
  VerifyApiKeyParams,
  VerifyTokenParams,
  type ApiKeyRevokedEvent,
} from "../shared/contracts/auth";
import type { AuthMeta } from "../shared/contracts/common";
import type { UserRemovedEvent } from "../shared/contracts/users";
import type { Config } from "../shared/config";
import { NotAuthenticatedError, NotFoundError, UserRemovedError } from "../shared/errors";
import { cleanCache, noRetry, serviceConfig, serviceStore } from "../shared/runtime";
import { checkApiKey, newApiKey, parseApiKey, InvalidApiKeyError, type ApiKeyDoc } from "./auth/api-keys";
import { ApiKeysRepository } from "./auth/api-keys.repository";
import { refreshTokens, startFamily, type RefreshDeps } from "./auth/refresh";
import { GRACE_SECONDS } from "./auth/refresh-family";
import { RefreshFamiliesRepository } from "./auth/refresh-families.repository";
import { authKeysOf, type AuthKeys } from "./auth/auth-keys";
import { RefreshTokensRepository } from "./auth/refresh-tokens.repository";
import { sweepExpiredTokens, TOKEN_SWEEP_INTERVAL_MS } from "./auth/token-sweep";
import { signAccessToken, verifyAccessToken } from "./auth/tokens";
import { randomUUID } from "node:crypto";
import { AUTH_CACHE_ENTRIES, LocalCache } from "../shared/runtime/local-cache";

interface AuthService extends Service {
  config: Config;
  /** JWT_PRIVATE_KEYS, REFRESH_TOKEN_SECRETS, JWT_LEGACY_SECRETS (./auth/auth-keys). */
  keys: AuthKeys;
  /** Users this process has seen active lately (see activeUser). */
  activeUsers: LocalCache<true>;
  activeUser(ctx: Context, userId: string): Promise<boolean>;
  refreshFamilies: RefreshFamiliesRepository;
  /** Refresh tokens issued before families (decision 0003), one document each, working until they expire. */
  refreshTokens: RefreshTokensRepository;
  /** Deletes long-expired refresh tokens every hour (see sweepExpiredTokens). */
  tokenSweep: NodeJS.Timeout | null;
  apiKeys: ApiKeysRepository;
  refreshDeps(): RefreshDeps;
  apiKeyRecord(id: string): Promise<Pick<ApiKeyDoc, "scope" | "secret_hash" | "revoked_at"> | null>;
}

const apiKeyCacheKey = (id: string) => `auth.apikey:${id}`;

/** An event group of this auth process alone, so that every auth process hears `user.removed`. */
const processGroup = `auth-${randomUUID()}`;

const AuthServiceSchema: ServiceSchema<Record<string, never>, AuthService> = {
  name: "auth",

  mixins: [ReadinessMixin],

  dependencies: ["users"],

  actions: {
    verifyAccessToken: {
      visibility: "public",
      params: VerifyTokenParams,
      async handler(
        this: AuthService,
        ctx: Context<ParamsOf<"auth.verifyAccessToken">>,
      ): Promise<ResultOf<"auth.verifyAccessToken">> {
        // `ignore_expiration` (a refresh): expired up to REFRESH_TOKEN_TTL ago is accepted.
        const claims = verifyAccessToken(ctx.params.token, this.keys.verification, this.config, {
          refresh: ctx.params.ignore_expiration ?? false,
        });
        if (!(await this.activeUser(ctx, claims.sub))) throw new UserRemovedError();
        return { id: claims.sub, token_id: claims.jti, exp: claims.exp };
      },
    },

    /**
     * The public keys (RFC 7517), and whether HS256 tokens of before ES256 are verified here (then the
     * gateway leaves them to auth instead of refusing them: JWT_LEGACY_SECRETS).
     */
    jwks: {
      visibility: "public",
      handler(this: AuthService): ResultOf<"auth.jwks"> {
        return { keys: this.keys.jwks, legacy_tokens: this.keys.verification.legacy.length > 0 };
      },
    },

    issueTokens: {
      retryPolicy: noRetry,
      visibility: "public",
      params: IssueTokensParams,
      async handler(
        this: AuthService,
        ctx: Context<ParamsOf<"auth.issueTokens">>,
      ): Promise<ResultOf<"auth.issueTokens">> {
        const status = await call(ctx, "users.status", { id: ctx.params.user_id });
        if (!status.exists) throw new NotFoundError("User not found");
        const now = new Date();
        const nowSeconds = Math.floor(now.getTime() / 1000);
        const ttl = ctx.params.access_ttl_seconds ?? this.config.accessTokenTtlSeconds;
        const access = signAccessToken(
          ctx.params.user_id,
          this.keys.signing,
          { ...this.config, accessTokenTtlSeconds: ttl },
          nowSeconds,
        );
        const refresh = await startFamily(this.refreshDeps(), ctx.params.user_id, now);
        return {
          access_token: access.token,
          expires_at: access.exp,
          refresh_token: refresh.token,
          refresh_token_expires_at: refresh.expiresAt,
          token_type: "Bearer",
        };
      },
    },

    /** POST /auth/refresh-token; the gateway verified the access token's signature (not its expiry). */
    refresh: {
      retryPolicy: noRetry,
      params: RefreshParams,
      handler(
        this: AuthService,
        ctx: Context<ParamsOf<"auth.refresh">, AuthMeta>,
      ): Promise<ResultOf<"auth.refresh">> {
        const caller = ctx.meta.user;
        if (!caller) throw new NotAuthenticatedError();
        return refreshTokens(this.refreshDeps(), caller.id, ctx.params.refresh_token);
      },
    },

    verifyApiKey: {
      visibility: "public",
      params: VerifyApiKeyParams,
      async handler(
        this: AuthService,
        ctx: Context<ParamsOf<"auth.verifyApiKey">>,
      ): Promise<ResultOf<"auth.verifyApiKey">> {
        const parsed = parseApiKey(ctx.params.key);
        if (!parsed) throw new InvalidApiKeyError();
        checkApiKey(await this.apiKeyRecord(parsed.id), parsed.secret, ctx.params.scope);
        return { key_id: parsed.id, scope: ctx.params.scope };
      },
    },

    createApiKey: {
      retryPolicy: noRetry,
      visibility: "public",
      params: CreateApiKeyParams,
      async handler(
        this: AuthService,
        ctx: Context<ParamsOf<"auth.createApiKey">>,
      ): Promise<ResultOf<"auth.createApiKey">> {
        const key = newApiKey();
        await this.apiKeys.create(
          {
            id: key.id,
            scope: ctx.params.scope,
            secretHash: key.secretHash,
            label: ctx.params.label ?? null,
          },
          new Date(),
        );
        return { id: key.id, scope: ctx.params.scope, key: key.key };
      },
    },

    revokeApiKey: {
      visibility: "public",
      params: RevokeApiKeyParams,
      async handler(
        this: AuthService,
        ctx: Context<ParamsOf<"auth.revokeApiKey">>,
      ): Promise<ResultOf<"auth.revokeApiKey">> {
        const revoked = await this.apiKeys.revoke(ctx.params.id, new Date());
        if (!revoked && !(await this.apiKeys.findById(ctx.params.id)))
          throw new NotFoundError("API key not found");
        await cleanCache(this, apiKeyCacheKey(ctx.params.id));
        // Every gateway forgets that it accepted the key (a lost event: until AUTH_CACHE_SECONDS pass).
        const event: ApiKeyRevokedEvent = { key_id: ctx.params.id };
        await ctx.emit(Events.apiKeyRevoked, event);
        return { revoked };
      },
    },
  },

  events: {
    // Every auth process forgets the user at once; each revokes the user's refresh tokens too (an
    // idempotent update: a second process finds them revoked already), in their families and in the
    // documents of tokens issued before families (decision 0003).
    [Events.userRemoved]: {
      group: processGroup,
      async handler(this: AuthService, ctx: Context<UserRemovedEvent>) {
        this.activeUsers.delete(ctx.params.user_id);
        const now = new Date();
        await this.refreshTokens.revokeUser(ctx.params.user_id, now);
        await this.refreshFamilies.revokeUser(ctx.params.user_id, now);
      },
    },
    // A `user.removed` sent while this process was cut off from the transporter never reaches it: on
    // every connection it forgets which users it found active, as Moleculer's memory cacher does on
    // `$transporter.connected` (raised on a nats 2.x reconnect too: shared/runtime/nats-transporter).
    "$transporter.connected"(this: AuthService) {
      this.activeUsers.clear();
    },
  },

  methods: {
    /**
     * Whether the user exists and is not removed. An active user is remembered for AUTH_CACHE_SECONDS
     * (as the gateway remembers verified tokens), so a token refresh or a read with a new token skips the
     * call to users; a removal is heard by every auth process (`user.removed`) and forgotten at once.
     */
    async activeUser(this: AuthService, ctx: Context, userId: string): Promise<boolean> {
      if (this.activeUsers.get(userId)) return true;
      const forgettings = this.activeUsers.forgettings;
      const status = await call(ctx, "users.status", { id: userId });
      const active = status.exists && !status.removed;
      // Not remembered when a `user.removed` (of anyone) overtook the call: it may be this user's.
      if (active && this.activeUsers.forgettings === forgettings) this.activeUsers.set(userId, true);
      return active;
    },

    refreshDeps(this: AuthService): RefreshDeps {
      return {
        families: this.refreshFamilies,
        legacy: this.refreshTokens,
        tokenKey: this.keys.refreshMint,
        formerTokenKeys: this.keys.refreshVerify.slice(1),
        signAccess: (userId, nowSeconds) =>
          signAccessToken(userId, this.keys.signing, this.config, nowSeconds),
        refreshTtlSeconds: this.config.refreshTokenTtlSeconds,
        graceSeconds: GRACE_SECONDS,
        now: () => new Date(),
      };
    },

    /** The key's record (hash, scope, revocation), cached by key id; revocation cleans the entry. */
    async apiKeyRecord(this: AuthService, id: string) {
      const cacher = this.broker.cacher;
      const cached = cacher ? await cacher.get(apiKeyCacheKey(id)) : null;
      if (cached) return cached as Pick<ApiKeyDoc, "scope" | "secret_hash" | "revoked_at">;
      const doc = await this.apiKeys.findById(id);
      if (!doc) return null;
      const record = { scope: doc.scope, secret_hash: doc.secret_hash, revoked_at: doc.revoked_at };
      if (cacher) await cacher.set(apiKeyCacheKey(id), record);
      return record;
    },
  },

  created(this: AuthService) {
    this.config = serviceConfig(this);
    this.keys = authKeysOf(this.config);
    this.activeUsers = new LocalCache(this.config.authCacheSeconds * 1000, AUTH_CACHE_ENTRIES);
  },

  async started(this: AuthService) {
    const store = await serviceStore(this);
    this.refreshFamilies = new RefreshFamiliesRepository(store);
    this.refreshTokens = new RefreshTokensRepository(store);
    this.apiKeys = new ApiKeysRepository(store);
    await this.refreshFamilies.init();
    await this.refreshTokens.init();
    const sweep = () =>
      void sweepExpiredTokens([this.refreshFamilies, this.refreshTokens], new Date()).catch((err: unknown) =>
        this.logger.warn("Sweeping expired refresh tokens failed; the next sweep tries again.", err),
      );
    this.tokenSweep = setInterval(sweep, TOKEN_SWEEP_INTERVAL_MS).unref();
    setImmediate(sweep);
  },

  stopped(this: AuthService) {
    if (this.tokenSweep) clearInterval(this.tokenSweep);
    this.tokenSweep = null;
  },
};

export default AuthServiceSchema;
