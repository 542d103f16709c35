/**
 * Refresh tokens, stored by hash. Every sign-in starts a family; each refresh adds a token to it (issue
 * "Accounts" completes rotation and reuse detection on top of this shape).
 */
import { randomUUID } from "node:crypto";
import type { Collection, Store } from "../../shared/storage";

export interface RefreshTokenDoc {
  _id: string; // SHA-256 of the token
  family_id: string;
  user_id: string;
  created_at: Date;
  expires_at: Date;
  rotated_at: Date | null;
  revoked_at: Date | null;
}

export class RefreshTokensRepository {
  private readonly tokens: Collection<RefreshTokenDoc>;

  constructor(store: Store) {
    this.tokens = store.collection<RefreshTokenDoc>("refresh_tokens");
  }

  async init(): Promise<void> {
    await this.tokens.createIndex({ fields: ["family_id"] });
    await this.tokens.createIndex({ fields: ["user_id"] });
  }

  async startFamily(userId: string, hash: string, now: Date, expiresAt: Date): Promise<RefreshTokenDoc> {
    return this.tokens.insertOne({
      _id: hash,
      family_id: randomUUID(),
      user_id: userId,
      created_at: now,
      expires_at: expiresAt,
      rotated_at: null,
      revoked_at: null,
    });
  }

  findByHash(hash: string): Promise<RefreshTokenDoc | null> {
    return this.tokens.findOne({ _id: hash });
  }

  /** Revokes every live token of the user (user removed). */
  revokeUser(userId: string, now: Date): Promise<number> {
    return this.tokens.updateMany({ user_id: userId, revoked_at: null }, { $set: { revoked_at: now } });
  }
}
