/**
 * API keys: `ak.<key id>.<secret>`. Only the SHA-256 of the secret is stored, with the key's scope; the
 * presented secret is compared in constant time. The id lets a key be found and revoked without the
 * secret ever being stored or logged.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { AppError, ErrorType, ForbiddenError } from "../../shared/errors";

export type ApiKeyScope = "app" | "notifications";

export interface ApiKeyDoc {
  _id: string;
  scope: ApiKeyScope;
  secret_hash: string;
  label: string | null;
  created_at: Date;
  revoked_at: Date | null;
}

const sha256 = (s: string): Buffer => createHash("sha256").update(s).digest();

export function newApiKey(): { id: string; secret: string; key: string; secretHash: string } {
  const id = randomBytes(8).toString("hex");
  const secret = randomBytes(32).toString("base64url");
  return { id, secret, key: `ak.${id}.${secret}`, secretHash: sha256(secret).toString("hex") };
}

export function parseApiKey(key: string): { id: string; secret: string } | null {
  const m = /^ak\.([0-9a-f]{16})\.([A-Za-z0-9_-]{20,100})$/.exec(key);
  return m ? { id: m[1], secret: m[2] } : null;
}

/** 401 for a key that is not one of ours (or revoked), 403 for a real key of the wrong scope. */
export class InvalidApiKeyError extends AppError {
  constructor(message = "Invalid API key") {
    super(message, 401, ErrorType.TOKEN_INVALID);
  }
}

export function checkApiKey(
  record: Pick<ApiKeyDoc, "scope" | "secret_hash" | "revoked_at"> | null,
  secret: string,
  scope: ApiKeyScope,
): void {
  const presented = sha256(secret);
  const expected = Buffer.from(record?.secret_hash ?? "", "hex");
  // Always one constant-time comparison of 32 bytes, even for an unknown id or a damaged record.
  const comparable = expected.length === presented.length;
  const matches =
    timingSafeEqual(presented, comparable ? expected : Buffer.alloc(presented.length)) && comparable;
  if (!record || !matches) throw new InvalidApiKeyError();
  if (record.revoked_at) throw new InvalidApiKeyError("API key revoked");
  if (record.scope !== scope) throw new ForbiddenError("API key not allowed for this operation");
}
