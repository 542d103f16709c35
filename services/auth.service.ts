/**
 * auth: verifies access tokens for the gateway and issues token sets. Refresh with rotation and API keys
 * come with the accounts issue; until then their actions answer 501.
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import { call, Events, type ParamsOf, type ResultOf } from "../shared/contracts";
import { IssueTokensParams, VerifyApiKeyParams, VerifyTokenParams } from "../shared/contracts/auth";
import type { UserRemovedEvent } from "../shared/contracts/users";
import type { Config } from "../shared/config";
import { NotFoundError, NotImplementedError, UserRemovedError } from "../shared/errors";
import { serviceConfig, serviceStore } from "../shared/runtime";
import { RefreshTokensRepository } from "./auth/refresh-tokens.repository";
import { hashToken, newRefreshToken, signAccessToken, verifyAccessToken } from "./auth/tokens";

interface AuthService extends Service {
  config: Config;
  refreshTokens: RefreshTokensRepository;
}

const AuthServiceSchema: ServiceSchema<Record<string, never>, AuthService> = {
  name: "auth",

  dependencies: ["users"],

  actions: {
    verifyAccessToken: {
      visibility: "public",
      params: VerifyTokenParams,
      async handler(
        this: AuthService,
        ctx: Context<ParamsOf<"auth.verifyAccessToken">>,
      ): Promise<ResultOf<"auth.verifyAccessToken">> {
        const claims = verifyAccessToken(ctx.params.token, this.config);
        const status = await call(ctx, "users.status", { id: claims.sub });
        if (!status.exists || status.removed) throw new UserRemovedError();
        return { id: claims.sub, token_id: claims.jti };
      },
    },

    issueTokens: {
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
          { ...this.config, accessTokenTtlSeconds: ttl },
          nowSeconds,
        );
        const refreshToken = newRefreshToken();
        const refreshExp = nowSeconds + this.config.refreshTokenTtlSeconds;
        await this.refreshTokens.startFamily(
          ctx.params.user_id,
          hashToken(refreshToken),
          now,
          new Date(refreshExp * 1000),
        );
        return {
          access_token: access.token,
          expires_at: access.exp,
          refresh_token: refreshToken,
          refresh_token_expires_at: refreshExp,
          token_type: "Bearer",
        };
      },
    },

    refresh: {
      handler(): never {
        throw new NotImplementedError();
      },
    },

    verifyApiKey: {
      visibility: "public",
      params: VerifyApiKeyParams,
      handler(): never {
        throw new NotImplementedError();
      },
    },
  },

  events: {
    [Events.userRemoved]: {
      async handler(this: AuthService, ctx: Context<UserRemovedEvent>) {
        await this.refreshTokens.revokeUser(ctx.params.user_id, new Date());
      },
    },
  },

  created(this: AuthService) {
    this.config = serviceConfig(this);
  },

  async started(this: AuthService) {
    this.refreshTokens = new RefreshTokensRepository(await serviceStore(this));
    await this.refreshTokens.init();
  },
};

export default AuthServiceSchema;
