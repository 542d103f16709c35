/** The users service's collections: users and friendships. */
import { randomUUID } from "node:crypto";
import { DuplicateKeyError, type Collection, type Store } from "../../shared/storage";
import type { CreateUserParams, UserProfile } from "../../shared/contracts/users";

export interface UserDoc {
  _id: string;
  phone: string;
  username: string;
  first_name: string | null;
  last_name: string | null;
  avatar_url: string | null;
  removed_at: Date | null;
  created_at: Date;
}

/** One document per pair, `_id` the two ids sorted, so a friendship exists once whoever adds it. */
export interface FriendshipDoc {
  _id: string;
  users: [string, string];
  created_at: Date;
}

export const toProfile = (doc: UserDoc): UserProfile => ({
  id: doc._id,
  phone: doc.phone,
  username: doc.username,
  first_name: doc.first_name,
  last_name: doc.last_name,
  avatar_url: doc.avatar_url,
  removed: doc.removed_at !== null,
});

export const friendshipId = (a: string, b: string): string => (a < b ? `${a}~${b}` : `${b}~${a}`);

export class UsersRepository {
  private readonly users: Collection<UserDoc>;
  private readonly friendships: Collection<FriendshipDoc>;

  constructor(store: Store) {
    this.users = store.collection<UserDoc>("users");
    this.friendships = store.collection<FriendshipDoc>("friendships");
  }

  async init(): Promise<void> {
    await this.users.createIndex({ fields: ["phone"], unique: true });
    await this.friendships.createIndex({ fields: ["users"] });
  }

  findById(id: string): Promise<UserDoc | null> {
    return this.users.findOne({ _id: id });
  }

  findByIds(ids: string[]): Promise<UserDoc[]> {
    return ids.length === 0 ? Promise.resolve([]) : this.users.find({ _id: { $in: ids } });
  }

  /** Resolves to null when the phone or id is taken. */
  async create(input: CreateUserParams, now: Date): Promise<UserDoc | null> {
    const doc: UserDoc = {
      _id: input.id ?? randomUUID(),
      phone: input.phone,
      username: input.username,
      first_name: input.first_name ?? null,
      last_name: input.last_name ?? null,
      avatar_url: input.avatar_url ?? null,
      removed_at: null,
      created_at: now,
    };
    try {
      return await this.users.insertOne(doc);
    } catch (err) {
      if (err instanceof DuplicateKeyError) return null;
      throw err;
    }
  }

  /** Marks the user removed (once); resolves to the document after the change, or null if unknown. */
  async markRemoved(id: string, now: Date): Promise<UserDoc | null> {
    await this.users.updateOne({ _id: id, removed_at: null }, { $set: { removed_at: now } });
    return this.findById(id);
  }

  /** Resolves to false when the friendship already existed. */
  async addFriendship(a: string, b: string, now: Date): Promise<boolean> {
    try {
      await this.friendships.insertOne({
        _id: friendshipId(a, b),
        users: a < b ? [a, b] : [b, a],
        created_at: now,
      });
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  /** Ids of the user's friends (friendship is mutual: one document per pair). */
  async friendIds(userId: string): Promise<string[]> {
    const docs = await this.friendships.find({ users: userId });
    return docs.map((d) => (d.users[0] === userId ? d.users[1] : d.users[0]));
  }

  async areFriends(a: string, b: string): Promise<boolean> {
    return (await this.friendships.findOne({ _id: friendshipId(a, b) })) !== null;
  }
}
