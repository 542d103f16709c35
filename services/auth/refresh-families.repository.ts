/**
 * Refresh-token families: one document per sign-in, updated in place by every refresh
 * (docs/decisions/0003-refresh-token-rotation.md). It names the generation of the token now live and
 * that token's SHA-256; retired tokens are recognised by their MAC and generation, so none of them
 * needs a document. Every change is one conditional update of the family's document, pinned to the
 * generation it was decided on, so two concurrent refreshes of one token cannot both win
 * (docs/decisions/0014-two-engines.md).
 */
import { DuplicateKeyError, type Collection, type DeepReadonly, type Store } from "../../shared/storage";

/**
 * How many lost generations a family remembers (see `lost_generations`). Each comes from a grace retry,
 * at most one per refresh, so without a bound a client refreshing twice at once, again and again, could
 * grow its document; an older lost token counts as retired, and presenting it as reuse.
 */
export const LOST_GENERATIONS_KEPT = 32;

export interface RefreshFamilyDoc {
  _id: string; // the family id, a UUID, as carried by its tokens
  user_id: string;
  /** The generation of the token now live. */
  generation: number;
  /** SHA-256 of the token now live. */
  current_hash: string;
  /** The generation of the token the live one replaced (null: none, the sign-in's first token). */
  parent_generation: number | null;
  /** When that parent was retired, which opens its grace window (docs/decisions/0003). */
  rotated_at: Date | null;
  /** When that parent spent its grace window. */
  grace_used_at: Date | null;
  /**
   * Generations that were handed out and then replaced, unused, by a grace retry of their parent:
   * presented, they answer "revoked", as the unused successor did when each token had a document.
   */
  lost_generations: number[];
  /**
   * The token issued before families (decision 0003) that this family continues (its generation 0), if
   * any.
   */
  legacy_hash: string | null;
  created_at: Date;
  /** When the live token expires; every rotation slides it. */
  expires_at: Date;
  revoked_at: Date | null;
}

/** The token that replaces the live one: its generation, hash and expiry. */
export interface NextToken {
  generation: number;
  hash: string;
  expiresAt: Date;
}

export class RefreshFamiliesRepository {
  private readonly families: Collection<RefreshFamilyDoc>;

  constructor(store: Store) {
    this.families = store.collection<RefreshFamilyDoc>("refresh_families");
  }

  async init(): Promise<void> {
    await this.families.createIndex({ fields: ["user_id"] });
    await this.families.createIndex({ fields: ["expires_at"] });
  }

  /** Stores a new family; false when one with this id exists already (a legacy family continued twice). */
  async insert(doc: RefreshFamilyDoc): Promise<boolean> {
    try {
      await this.families.insertOne(doc);
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  /** The family as stored, for reading only (uncopied on the embedded engine, shared/storage/port.ts). */
  find(id: string): Promise<DeepReadonly<RefreshFamilyDoc> | null> {
    return this.families.readById(id);
  }

  /**
   * Retires the live token of generation `from` in favour of `next`; false when the family moved on
   * (another refresh got there first) or was revoked.
   */
  async rotate(id: string, from: number, next: NextToken, now: Date): Promise<boolean> {
    const matched = await this.families.updateOne(
      { _id: id, generation: from, revoked_at: null },
      {
        $set: {
          generation: next.generation,
          current_hash: next.hash,
          parent_generation: from,
          rotated_at: now,
          grace_used_at: null,
          expires_at: next.expiresAt,
        },
      },
    );
    return matched === 1;
  }

  /**
   * The grace retry: the parent of the live token of generation `from` spends its window, once, if it
   * was retired at or after `since`; the live token, never used, is replaced by `next` and remembered
   * among `lost` generations. False when the family moved on, the grace was spent, or it was revoked.
   */
  async useGrace(id: string, from: number, since: Date, next: NextToken, now: Date, lost: number[]) {
    const matched = await this.families.updateOne(
      {
        _id: id,
        generation: from,
        grace_used_at: null,
        revoked_at: null,
        // `$ne: null`: NeDB compares a stored null as lower than any Date (shared/storage/port.ts).
        rotated_at: { $gte: since, $ne: null },
      },
      {
        $set: {
          generation: next.generation,
          current_hash: next.hash,
          grace_used_at: now,
          expires_at: next.expiresAt,
          lost_generations: lost,
        },
      },
    );
    return matched === 1;
  }

  /** Revokes the family (every token of it); false when it is unknown or revoked already. */
  async revoke(id: string, now: Date): Promise<boolean> {
    const matched = await this.families.updateOne(
      { _id: id, revoked_at: null },
      { $set: { revoked_at: now } },
    );
    return matched === 1;
  }

  /** Revokes every live family of the user (user removed). */
  revokeUser(userId: string, now: Date): Promise<number> {
    return this.families.updateMany({ user_id: userId, revoked_at: null }, { $set: { revoked_at: now } });
  }

  /** Deletes the families whose live token expired before `before`: none of their tokens works any more. */
  deleteExpiredBefore(before: Date): Promise<number> {
    return this.families.deleteMany({ expires_at: { $lt: before } });
  }
}
