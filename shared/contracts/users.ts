/** Contracts of the users service: profiles and the removed flag, friendships. */
import { Type, type Static } from "@sinclair/typebox";
import { Id, Nullable } from "./common";

export const UserProfile = Type.Object({
  id: Type.String(),
  phone: Type.String(),
  username: Type.String(),
  first_name: Nullable(Type.String()),
  last_name: Nullable(Type.String()),
  avatar_url: Nullable(Type.String()),
  removed: Type.Boolean(),
});
export type UserProfile = Static<typeof UserProfile>;

/**
 * Profiles asked for in one call: the answer stays one packet of at most about 500 KB even with every
 * field at its longest (2,048-character avatar URLs); a caller with more ids asks in pages.
 */
export const PROFILES_PAGE_MAX = 200;

export const ProfilesParams = Type.Object({ ids: Type.Array(Id, { maxItems: PROFILES_PAGE_MAX }) });
export type ProfilesParams = Static<typeof ProfilesParams>;
/** Profiles by id; ids of unknown users are absent. */
export type ProfilesResult = Record<string, UserProfile>;

export const StatusParams = Type.Object({ id: Id });
export type StatusParams = Static<typeof StatusParams>;
export interface StatusResult {
  exists: boolean;
  removed: boolean;
}

export const AreFriendsParams = Type.Object({ a: Id, b: Id });
export type AreFriendsParams = Static<typeof AreFriendsParams>;

export const CreateUserParams = Type.Object({
  id: Type.Optional(Id),
  phone: Type.String({ minLength: 3, maxLength: 32 }),
  username: Type.String({ minLength: 1, maxLength: 64 }),
  first_name: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
  last_name: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
  avatar_url: Type.Optional(Nullable(Type.String({ maxLength: 2048 }))),
});
export type CreateUserParams = Static<typeof CreateUserParams>;

export const RemoveUserParams = Type.Object({ id: Id });
export type RemoveUserParams = Static<typeof RemoveUserParams>;

export const AddFriendsParams = Type.Object({ a: Id, b: Id });
export type AddFriendsParams = Static<typeof AddFriendsParams>;

/** Event `user.removed`. */
export interface UserRemovedEvent {
  user_id: string;
  removed_at: string;
}

/**
 * Event `user.lists.changed`: a cache notice (not a fact) that these users' friends or payments lists
 * changed, so every gateway drops the answers it keeps for them.
 */
export interface UserListsChangedEvent {
  user_ids: string[];
}

/** §2.13, an element of GET /users/friends. */
export const Friend = Type.Object({
  id: Type.String(),
  phone: Type.String(),
  first_name: Type.String(),
  last_name: Type.String(),
  username: Type.String(),
  avatar_url: Type.String(),
});
export type Friend = Static<typeof Friend>;
export const FriendList = Type.Array(Friend);

/** §2.14, an element of GET /users/payments. */
export const Payment = Type.Object({
  id: Type.String(),
  amount: Type.String(),
  description: Type.String(),
  order_id: Type.String(),
  status: Type.String(),
  round_id: Type.String(),
});
export type Payment = Static<typeof Payment>;
export const PaymentList = Type.Array(Payment);

export const AddDeviceParams = Type.Object({
  user_id: Type.String({ minLength: 1, maxLength: 64 }),
  token: Type.String({ minLength: 1, maxLength: 4096 }),
});
export type AddDeviceParams = Static<typeof AddDeviceParams>;

/** Most tokens in one answer of `users.deviceTokens` (which is also bounded by bytes: shared/contracts/paging). */
export const DEVICE_TOKENS_PAGE_MAX = 5000;

export const DeviceTokensParams = Type.Object({
  user_ids: Type.Array(Type.String({ maxLength: 64 }), { maxItems: 10_000 }),
  /** The `next` of the previous answer: the tokens after it. */
  after: Type.Optional(Type.String({ maxLength: 4096 })),
});
export type DeviceTokensParams = Static<typeof DeviceTokensParams>;
export interface DeviceTokensResult {
  /** A page of the users' tokens, sorted, so a job's batches come out the same way every time. */
  tokens: string[];
  /** How many of the users have a device at all (every page says it). */
  users_with_devices: number;
  /** Ask again with `after` set to this for the next page; null after the last. */
  next: string | null;
}

export const PruneTokensParams = Type.Object({
  tokens: Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 10_000 }),
});
export type PruneTokensParams = Static<typeof PruneTokensParams>;

/** Bulk registration (operations: migrations, load tests); user ids are not checked. */
export const ImportDevicesParams = Type.Object({
  devices: Type.Array(
    Type.Object({
      user_id: Type.String({ minLength: 1, maxLength: 64 }),
      token: Type.String({ minLength: 1, maxLength: 4096 }),
    }),
    { maxItems: 10_000 },
  ),
});
export type ImportDevicesParams = Static<typeof ImportDevicesParams>;
