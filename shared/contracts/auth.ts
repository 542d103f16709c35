/** Contracts of the auth service: access-token verification and token sets. */
import { Type, type Static } from "@sinclair/typebox";
import type { Caller } from "./common";
import { Id } from "./common";

export const VerifyTokenParams = Type.Object({ token: Type.String({ minLength: 1, maxLength: 8192 }) });
export type VerifyTokenParams = Static<typeof VerifyTokenParams>;
export type VerifyTokenResult = Caller;

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

export const RefreshTokenBody = Type.Object({ refresh_token: Type.String() });

export const VerifyApiKeyParams = Type.Object({
  key: Type.String({ minLength: 1, maxLength: 512 }),
  scope: Type.Union([Type.Literal("app"), Type.Literal("notifications")]),
});
export type VerifyApiKeyParams = Static<typeof VerifyApiKeyParams>;
