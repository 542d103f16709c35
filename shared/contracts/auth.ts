/** Contracts of the auth service: access-token verification and token sets. */
import { Type, type Static } from "@sinclair/typebox";
import type { PublicJwk } from "../auth/jwk";
import type { Caller } from "./common";
import { Id } from "./common";

export const VerifyTokenParams = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 8192 }),
  /**
   * POST /auth/refresh-token accepts an expired access token (refreshing is what a client does then),
   * expired up to REFRESH_TOKEN_TTL ago.
   */
  ignore_expiration: Type.Optional(Type.Boolean()),
});
export type VerifyTokenParams = Static<typeof VerifyTokenParams>;
/** The caller, and when the token expires (epoch seconds): the gateway remembers it no longer. */
export type VerifyTokenResult = Caller & { exp: number };

/**
 * `auth.jwks`: the public keys of access tokens (the JWKS of /.well-known/jwks.json), and whether auth
 * verifies HS256 tokens issued before ES256 (JWT_LEGACY_SECRETS), which the gateway then forwards to it.
 */
export interface JwksResult {
  keys: PublicJwk[];
  legacy_tokens: boolean;
}

export const IssueTokensParams = Type.Object({
  user_id: Id,
  /** Overrides ACCESS_TOKEN_TTL (demo fixtures); internal only, never reachable over HTTP. */
  access_ttl_seconds: Type.Optional(Type.Integer({ minimum: 30, maximum: 31_536_000 })),
});
export type IssueTokensParams = Static<typeof IssueTokensParams>;

/** §2.15. `expires_at` and `refresh_token_expires_at` are Unix seconds. */
export const TokenSet = Type.Object({
  access_token: Type.String(),
  expires_at: Type.Integer(),
  refresh_token: Type.String(),
  refresh_token_expires_at: Type.Integer(),
  token_type: Type.Literal("Bearer"),
});
export type TokenSet = Static<typeof TokenSet>;

/** POST /auth/refresh-token: the body's field; the caller comes from the access token. */
export const RefreshParams = Type.Object({ refresh_token: Type.String({ maxLength: 512 }) });
export type RefreshParams = Static<typeof RefreshParams>;

export const VerifyApiKeyParams = Type.Object({
  key: Type.String({ minLength: 1, maxLength: 512 }),
  scope: Type.Union([Type.Literal("app"), Type.Literal("notifications")]),
});
export type VerifyApiKeyParams = Static<typeof VerifyApiKeyParams>;
export interface VerifyApiKeyResult {
  key_id: string;
  scope: "app" | "notifications";
}

export const CreateApiKeyParams = Type.Object({
  scope: Type.Union([Type.Literal("app"), Type.Literal("notifications")]),
  label: Type.Optional(Type.String({ maxLength: 200 })),
});
export type CreateApiKeyParams = Static<typeof CreateApiKeyParams>;
/** The key itself is shown once, here, and never again. */
export interface CreateApiKeyResult {
  id: string;
  scope: "app" | "notifications";
  key: string;
}

export const RevokeApiKeyParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });
export type RevokeApiKeyParams = Static<typeof RevokeApiKeyParams>;

/** `api-key.revoked`: auth revoked the key; every gateway forgets that it accepted it. */
export interface ApiKeyRevokedEvent {
  key_id: string;
}
