/**
 * Refresh tokens issued before families (decision 0003), one document each, stored only by their
 * SHA-256: every sign-in started a family; every refresh rotated the presented token (marked it rotated, named its
 * successor) and added the successor to the family. Nothing adds such documents any more (`insert` and
 * `startFamily` remain for the tests of the upgrade path): they keep working until they expire, the
 * first refresh of a live one claiming it with `markRotated` and continuing its family as a family
 * document (refresh-legacy.ts). All state changes are conditional updates, so two concurrent refreshes
 * of one token cannot both win; processes of the previous version, during a rolling upgrade, make the
 * same ones.
 */
import { randomUUID } from "node:crypto";
import type { Collection, Store } from "../../shared/storage";

export interface RefreshTokenDoc {
  _id: string; // SHA-256 of the token
  family_id: string;
  user_id: string;
  parent: string | null;
  created_at: Date;
  expires_at: Date;
  rotated_at: Date | null;
  replaced_by: string | null;
  /** When the grace window was spent on this token (it works once more after rotation, docs/decisions/0003). */
  grace_used_at: Date | null;
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
    await this.tokens.createIndex({ fields: ["expires_at"] });
  }

  /** Deletes the tokens that expired before `before`: nothing can be done with them any more. */
  deleteExpiredBefore(before: Date): Promise<number> {
    return this.tokens.deleteMany({ expires_at: { $lt: before } });
  }

  async startFamily(userId: string, hash: string, now: Date, expiresAt: Date): Promise<RefreshTokenDoc> {
    return this.insert({ hash, familyId: randomUUID(), userId, parent: null, now, expiresAt });
  }

  insert(t: {
    hash: string;
    familyId: string;
    userId: string;
    parent: string | null;
    now: Date;
    expiresAt: Date;
  }) {
    return this.tokens.insertOne({
      _id: t.hash,
      family_id: t.familyId,
      user_id: t.userId,
      parent: t.parent,
      created_at: t.now,
      expires_at: t.expiresAt,
      rotated_at: null,
      replaced_by: null,
      grace_used_at: null,
      revoked_at: null,
    });
  }

  findByHash(hash: string): Promise<RefreshTokenDoc | null> {
    return this.tokens.findOne({ _id: hash });
  }

  /** Rotates a live, never-rotated token; false when another refresh got there first or it was revoked. */
  async markRotated(hash: string, successor: string, now: Date): Promise<boolean> {
    const matched = await this.tokens.updateOne(
      { _id: hash, rotated_at: null, revoked_at: null },
      { $set: { rotated_at: now, replaced_by: successor } },
    );
    return matched === 1;
  }

  /** Spends the grace window of a rotated token, once, if it was rotated at or after `since`. */
  async useGrace(hash: string, successor: string, since: Date, now: Date): Promise<boolean> {
    const matched = await this.tokens.updateOne(
      { _id: hash, rotated_at: { $gte: since, $ne: null }, grace_used_at: null, revoked_at: null },
      { $set: { grace_used_at: now, replaced_by: successor } },
    );
    return matched === 1;
  }

  /** Revokes a token that was never used; false when it was used (rotated) or is already revoked. */
  async revokeIfUnused(hash: string, now: Date): Promise<boolean> {
    const matched = await this.tokens.updateOne(
      { _id: hash, rotated_at: null, revoked_at: null },
      { $set: { revoked_at: now } },
    );
    return matched === 1;
  }

  revokeFamily(familyId: string, now: Date): Promise<number> {
    return this.tokens.updateMany({ family_id: familyId, revoked_at: null }, { $set: { revoked_at: now } });
  }

  /** Revokes every live token of the user (user removed). */
  revokeUser(userId: string, now: Date): Promise<number> {
    return this.tokens.updateMany({ user_id: userId, revoked_at: null }, { $set: { revoked_at: now } });
  }
}
