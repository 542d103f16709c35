/**
 * users: profiles, the removed flag and friendships. Other services read profiles through `profiles` and
 * `status` (both cached); removing a user emits `user.removed`.
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import { ReadinessMixin } from "../shared/runtime/readiness";
import { Events, type ParamsOf, type ResultOf } from "../shared/contracts";
import {
  AddDeviceParams,
  DeviceTokensParams,
  type DeviceTokensResult,
  PruneTokensParams,
  ImportDevicesParams,
  AddFriendsParams,
  AreFriendsParams,
  CreateUserParams,
  ProfilesParams,
  RemoveUserParams,
  StatusParams,
  type UserListsChangedEvent,
  type UserRemovedEvent,
} from "../shared/contracts/users";
import type { AuthMeta } from "../shared/contracts/common";
import { RoundMemberJoinedEvent } from "../shared/contracts/rounds";
import { ConflictError, NotAuthenticatedError, NotFoundError } from "../shared/errors";
import { cached, cleanCache, noRetry, serviceStore } from "../shared/runtime";
import { Channels, factChannel, factHandler } from "../shared/runtime/channels";
import { valueAnswer, type StreamAnswerMeta } from "../shared/runtime/list-answer";
import { toFriends, toPayment } from "./users/lists";
import { DevicesRepository } from "./users/devices.repository";
import { PaymentsRepository } from "./users/payments.repository";
import { toProfile, UsersRepository } from "./users/users.repository";

interface UsersService extends Service {
  repo: UsersRepository;
  payments: PaymentsRepository;
  devices: DevicesRepository;
  listsChanged(userIds: string[]): Promise<void>;
}

type ListContext = Context<unknown, AuthMeta & StreamAnswerMeta>;

const callerId = (ctx: Context<unknown, AuthMeta>): string => {
  if (!ctx.meta.user) throw new NotAuthenticatedError();
  return ctx.meta.user.id;
};

const UsersServiceSchema: ServiceSchema<Record<string, never>, UsersService> = {
  name: "users",

  mixins: [ReadinessMixin],

  actions: {
    profiles: {
      visibility: "public",
      params: ProfilesParams,
      async handler(
        this: UsersService,
        ctx: Context<ParamsOf<"users.profiles">>,
      ): Promise<ResultOf<"users.profiles">> {
        const ids = [...new Set(ctx.params.ids)];
        // Under the action cache's key; kept only when every user was found, so that a sign-up has no
        // cached miss to clean.
        return cached(
          this,
          this.broker.cacher?.getCacheKey("users.profiles", ctx.params, {}, ["ids"]),
          async () => Object.fromEntries((await this.repo.findByIds(ids)).map((d) => [d._id, toProfile(d)])),
          (profiles) => ids.every((id) => id in profiles),
        );
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
      retryPolicy: noRetry,
      visibility: "public",
      params: CreateUserParams,
      async handler(
        this: UsersService,
        ctx: Context<ParamsOf<"users.create">>,
      ): Promise<ResultOf<"users.create">> {
        const doc = await this.repo.create(ctx.params, new Date());
        if (!doc) throw new ConflictError("A user with this id or phone already exists");
        // No profiles answer holds this user yet, nor a miss of them (the profiles action keeps none).
        await cleanCache(this, `users.status:${doc._id}`);
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
        // A removed user leaves every friends list they were on.
        await cleanCache(this, `users.status:${doc._id}`, "users.profiles:**", "users.friends:**");
        const event: UserRemovedEvent = {
          user_id: doc._id,
          removed_at: (doc.removed_at as Date).toISOString(),
        };
        await ctx.emit(Events.userRemoved, event);
        return toProfile(doc);
      },
    },

    /**
     * GET /users/friends: cached per caller (the key is the caller's id, never shared). A list too long
     * for one packet is answered as a stream (shared/runtime/list-answer).
     */
    friends: {
      async handler(this: UsersService, ctx: ListContext) {
        const id = callerId(ctx);
        const list = await cached(this, `users.friends:${id}`, async () =>
          toFriends(await this.repo.findByIds(await this.repo.friendIds(id))),
        );
        return valueAnswer(ctx, list);
      },
    },

    /** GET /users/payments: newest first, cached per caller, cleaned when a payment is added; long: streamed. */
    payments: {
      async handler(this: UsersService, ctx: ListContext) {
        const id = callerId(ctx);
        const list = await cached(this, `users.payments:${id}`, async () =>
          (await this.payments.listByUser(id)).map(toPayment),
        );
        return valueAnswer(ctx, list);
      },
    },

    /** Device registration tokens (push): added with the CLI, read and pruned by the notifier. */
    addDevice: {
      visibility: "public",
      params: AddDeviceParams,
      async handler(this: UsersService, ctx: Context<AddDeviceParams>) {
        if (!(await this.repo.findById(ctx.params.user_id))) throw new NotFoundError("User not found");
        await this.devices.add(ctx.params.user_id, ctx.params.token, new Date());
        return { user_id: ctx.params.user_id, token: ctx.params.token };
      },
    },

    importDevices: {
      visibility: "public",
      params: ImportDevicesParams,
      async handler(this: UsersService, ctx: Context<ImportDevicesParams>) {
        return { added: await this.devices.import(ctx.params.devices, new Date()) };
      },
    },

    deviceTokens: {
      visibility: "public",
      params: DeviceTokensParams,
      async handler(this: UsersService, ctx: Context<DeviceTokensParams>): Promise<DeviceTokensResult> {
        const found = await this.devices.tokensOf(ctx.params.user_ids, ctx.params.after);
        return { tokens: found.tokens, users_with_devices: found.usersWithDevices, next: found.next };
      },
    },

    pruneTokens: {
      visibility: "public",
      params: PruneTokensParams,
      async handler(this: UsersService, ctx: Context<PruneTokensParams>) {
        return { pruned: await this.devices.prune(ctx.params.tokens) };
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
        await cleanCache(this, "users.areFriends:**", `users.friends:${a}`, `users.friends:${b}`);
        if (created) await this.listsChanged([a, b]);
        return { created };
      },
    },
  },

  channels: {
    /** A paid seat becomes a pending payment, once per user and round whatever the deliveries. */
    [Channels.roundMemberJoined]: {
      group: "users",
      ...factChannel,
      handler: factHandler<RoundMemberJoinedEvent, UsersService>(
        { name: Channels.roundMemberJoined, group: "users" },
        RoundMemberJoinedEvent,
        async function (this: UsersService, e) {
          if (!(Number(e.entry_fee) > 0)) return;
          const created = await this.payments.createPending({
            user_id: e.user_id,
            round_id: e.round_id,
            amount: e.entry_fee,
            currency: e.currency,
            description: `Entry fee for round ${e.uniq_id}`,
            created_at: new Date(e.joined_at),
          });
          if (created) {
            await cleanCache(this, `users.payments:${e.user_id}`);
            await this.listsChanged([e.user_id]);
          }
        },
      ),
    },
  },

  methods: {
    /**
     * Tells every gateway to drop the answers it keeps for these users' lists (a cache notice; the
     * change itself is stored). A lost notice costs at most the gateway's RESPONSE_CACHE_MS.
     */
    async listsChanged(this: UsersService, userIds: string[]): Promise<void> {
      const event: UserListsChangedEvent = { user_ids: userIds };
      await this.broker
        .emit(Events.userListsChanged, event)
        .catch((err: unknown) => this.logger.warn("Could not tell the gateways about changed lists", err));
    },
  },

  async started(this: UsersService) {
    const store = await serviceStore(this);
    this.repo = new UsersRepository(store);
    this.payments = new PaymentsRepository(store);
    this.devices = new DevicesRepository(store);
    await Promise.all([this.repo.init(), this.payments.init(), this.devices.init()]);
  },
};

export default UsersServiceSchema;
