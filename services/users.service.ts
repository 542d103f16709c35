/**
 * users: profiles, the removed flag and friendships. Other services read profiles through `profiles` and
 * `status` (both cached); removing a user emits `user.removed`.
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import { Events, type ParamsOf, type ResultOf } from "../shared/contracts";
import {
  AddFriendsParams,
  AreFriendsParams,
  CreateUserParams,
  ProfilesParams,
  RemoveUserParams,
  StatusParams,
  type UserRemovedEvent,
} from "../shared/contracts/users";
import { ConflictError, NotFoundError, NotImplementedError } from "../shared/errors";
import { cleanCache, serviceStore } from "../shared/runtime";
import { toProfile, UsersRepository } from "./users/users.repository";

interface UsersService extends Service {
  repo: UsersRepository;
}

const UsersServiceSchema: ServiceSchema<Record<string, never>, UsersService> = {
  name: "users",

  actions: {
    profiles: {
      visibility: "public",
      params: ProfilesParams,
      cache: { keys: ["ids"] },
      async handler(
        this: UsersService,
        ctx: Context<ParamsOf<"users.profiles">>,
      ): Promise<ResultOf<"users.profiles">> {
        const docs = await this.repo.findByIds([...new Set(ctx.params.ids)]);
        return Object.fromEntries(docs.map((d) => [d._id, toProfile(d)]));
      },
    },

    status: {
      visibility: "public",
      params: StatusParams,
      cache: { keys: ["id"] },
      async handler(
        this: UsersService,
        ctx: Context<ParamsOf<"users.status">>,
      ): Promise<ResultOf<"users.status">> {
        const doc = await this.repo.findById(ctx.params.id);
        return { exists: doc !== null, removed: doc ? doc.removed_at !== null : false };
      },
    },

    areFriends: {
      visibility: "public",
      params: AreFriendsParams,
      cache: { keys: ["a", "b"] },
      handler(this: UsersService, ctx: Context<ParamsOf<"users.areFriends">>): Promise<boolean> {
        return this.repo.areFriends(ctx.params.a, ctx.params.b);
      },
    },

    create: {
      visibility: "public",
      params: CreateUserParams,
      async handler(
        this: UsersService,
        ctx: Context<ParamsOf<"users.create">>,
      ): Promise<ResultOf<"users.create">> {
        const doc = await this.repo.create(ctx.params, new Date());
        if (!doc) throw new ConflictError("A user with this id or phone already exists");
        await cleanCache(this, `users.status:${doc._id}`, "users.profiles:**");
        return toProfile(doc);
      },
    },

    remove: {
      visibility: "public",
      params: RemoveUserParams,
      async handler(
        this: UsersService,
        ctx: Context<ParamsOf<"users.remove">>,
      ): Promise<ResultOf<"users.remove">> {
        const doc = await this.repo.markRemoved(ctx.params.id, new Date());
        if (!doc) throw new NotFoundError("User not found");
        await cleanCache(this, `users.status:${doc._id}`, "users.profiles:**");
        const event: UserRemovedEvent = {
          user_id: doc._id,
          removed_at: (doc.removed_at as Date).toISOString(),
        };
        await ctx.emit(Events.userRemoved, event);
        return toProfile(doc);
      },
    },

    // GET /users/friends and /users/payments come with the accounts issue.
    friends: {
      handler(): never {
        throw new NotImplementedError();
      },
    },

    payments: {
      handler(): never {
        throw new NotImplementedError();
      },
    },

    addFriends: {
      visibility: "public",
      params: AddFriendsParams,
      async handler(
        this: UsersService,
        ctx: Context<ParamsOf<"users.addFriends">>,
      ): Promise<ResultOf<"users.addFriends">> {
        const { a, b } = ctx.params;
        const [userA, userB] = await Promise.all([this.repo.findById(a), this.repo.findById(b)]);
        if (!userA || !userB) throw new NotFoundError("User not found");
        const created = await this.repo.addFriendship(a, b, new Date());
        await cleanCache(this, "users.areFriends:**");
        return { created };
      },
    },
  },

  async started(this: UsersService) {
    this.repo = new UsersRepository(await serviceStore(this));
    await this.repo.init();
  },
};

export default UsersServiceSchema;
