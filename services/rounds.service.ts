/**
 * rounds: rounds with their members, question and certificate. Reads and joins for the gateway; emits
 * `round.member.joined` once per new membership.
 */
import type { Readable } from "node:stream";
import type { Context, Service, ServiceSchema } from "moleculer";
import { ReadinessMixin } from "../shared/runtime/readiness";
import { call, Events, type ParamsOf, type ResultOf } from "../shared/contracts";
import type { AuthMeta, FreshnessMeta } from "../shared/contracts/common";
import { CreateRoundParams, GetRoundParams, JoinRoundParams } from "../shared/contracts/rounds";
import type { Config } from "../shared/config";
import { NotAuthenticatedError } from "../shared/errors";
import { cleanCache, noRetry, serviceConfig, serviceStore } from "../shared/runtime";
import { buildSnapshot, deriveSnapshot, profileIdsOf, type RoundSnapshot } from "./rounds/round-snapshot";
import { getRoundAnswer, joinRound, type RoundsDeps } from "./rounds/rounds.domain";
import { RoundAnswers } from "./rounds/round-answers";
import { valueAnswer, type StreamAnswerMeta } from "../shared/runtime/list-answer";
import { pagesOf } from "../shared/contracts/paging";
import { PROFILES_PAGE_MAX, type ProfilesResult } from "../shared/contracts/users";
import { joinedEvent, pendingJoin, RoundsRepository } from "./rounds/rounds.repository";
import type { RoundDoc, RoundRead } from "./rounds/round-doc";
import { FullRounds } from "./rounds/full-rounds";
import { randomUUID } from "node:crypto";
import { LocalCache } from "../shared/runtime/local-cache";
import type { UserRemovedEvent } from "../shared/contracts/users";
import { eventRoundParams } from "./rounds/event-round";
import { DEFAULT_CURRENCY } from "./stores/countries";
import { QuestionsRepository } from "./rounds/questions";
import { StoreEventCreatedEvent } from "../shared/contracts/stores";
import { DuplicateKeyError } from "../shared/storage";
import type { OutboxRelay } from "../shared/outbox";
import { Channels, factChannel, factHandler } from "../shared/runtime/channels";
import { startOutboxRelay, startOutboxSweeper } from "../shared/runtime/start-outbox-relay";
import type { Sweeper } from "../shared/runtime/sweeper";
import { traceContextOf } from "../shared/tracing/propagation";

interface RoundsService extends Service {
  config: Config;
  repo: RoundsRepository;
  questions: QuestionsRepository;
  relay: OutboxRelay;
  /** Drops outbox leftovers past OUTBOX_RETENTION_MS (shared/outbox/expiry). */
  outboxSweeper: Sweeper;
  fullRounds: FullRounds;
  /** Answers shared by the callers who see a round alike (per snapshot). */
  answers: RoundAnswers;
  /** Snapshots this process used lately, in front of the shared cacher (Redis when distributed). */
  snapshots: LocalCache<RoundSnapshot>;
  /** Snapshots being assembled, by key: one assembly per revision at a time. */
  assembling: Map<string, Promise<RoundSnapshot>>;
  deps(ctx: Context): RoundsDeps;
  joined(ctx: Context, doc: RoundDoc, userId: string): Promise<void>;
  snapshotOf(ctx: Context, doc: RoundRead, base?: RoundSnapshot): Promise<RoundSnapshot>;
  assembleSnapshot(ctx: Context, doc: RoundRead, key: string, base?: RoundSnapshot): Promise<RoundSnapshot>;
  profilesOf(ctx: Context, ids: string[]): Promise<ProfilesResult>;
}

const callerId = (ctx: Context<unknown, AuthMeta>): string => {
  const user = ctx.meta.user;
  if (!user) throw new NotAuthenticatedError();
  return user.id;
};

const snapshotKey = (id: string, rev: number): string => `rounds.snapshot:${id}:${rev}`;

/** An event group of this rounds process alone, so that every rounds process hears `user.removed`. */
const processGroup = `rounds-${randomUUID()}`;

/**
 * Below this many participants a round's answer is far from a page (about 300 bytes each): it is
 * answered as it is, without measuring.
 */
const PARTICIPANTS_MEASURED = 100;

const mayBeLarge = (round: { participant_statuses?: unknown[] | null }): boolean =>
  (round.participant_statuses?.length ?? 0) > PARTICIPANTS_MEASURED;

const RoundsServiceSchema: ServiceSchema<Record<string, never>, RoundsService> = {
  name: "rounds",

  mixins: [ReadinessMixin],

  dependencies: ["users", "stores"],

  actions: {
    get: {
      params: GetRoundParams,
      async handler(
        this: RoundsService,
        ctx: Context<ParamsOf<"rounds.get">, AuthMeta & FreshnessMeta & StreamAnswerMeta>,
      ): Promise<ResultOf<"rounds.get"> | Readable> {
        const answer = await getRoundAnswer(this.deps(ctx), this.answers, ctx.params.round_id, callerId(ctx));
        // How long this answer stays right, and for whom else: the gateway may serve it again meanwhile.
        ctx.meta.$freshUntil = answer.freshUntil;
        if (answer.sameForAllBut) ctx.meta.$sameForAllBut = answer.sameForAllBut;
        if (answer.countdown) ctx.meta.$countdown = answer.countdown;
        // A round with very many participants: streamed (shared/runtime/list-answer).
        return valueAnswer(ctx, answer.round, mayBeLarge(answer.round));
      },
    },

    join: {
      params: JoinRoundParams,
      async handler(
        this: RoundsService,
        ctx: Context<ParamsOf<"rounds.join">, AuthMeta & StreamAnswerMeta>,
      ): Promise<ResultOf<"rounds.join"> | Readable> {
        const round = await joinRound(
          this.deps(ctx),
          ctx.params.round_id,
          callerId(ctx),
          ctx.params.attributes,
        );
        return valueAnswer(ctx, round, mayBeLarge(round));
      },
    },

    /** A question for a new event round, drawn from the catalog (the stores service reports its id). */
    pickQuestion: {
      visibility: "public",
      async handler(this: RoundsService): Promise<ResultOf<"rounds.pickQuestion">> {
        return this.questions.pick();
      },
    },

    create: {
      retryPolicy: noRetry,
      visibility: "public",
      params: CreateRoundParams,
      async handler(
        this: RoundsService,
        ctx: Context<ParamsOf<"rounds.create">>,
      ): Promise<ResultOf<"rounds.create">> {
        const currency = ctx.params.locations[0]?.city.country.currency || DEFAULT_CURRENCY;
        const doc = await this.repo.create(ctx.params, currency, new Date());
        return { id: doc._id, uniq_id: doc.uniq_id };
      },
    },
  },

  events: {
    // A removed user leaves the rounds they were in: snapshots are keyed by the round's revision, which a
    // removal does not change, so they all go (here and in the shared cacher; removals are rare).
    [Events.userRemoved]: {
      group: processGroup,
      async handler(this: RoundsService, _ctx: Context<UserRemovedEvent>) {
        this.snapshots.clear();
        await cleanCache(this, "rounds.snapshot:*");
      },
    },
  },

  channels: {
    /** Opens the event's round; a redelivered event meets the round's derived id and opens nothing. */
    [Channels.storeEventCreated]: {
      group: "rounds",
      ...factChannel,
      handler: factHandler<StoreEventCreatedEvent, RoundsService>(
        { name: Channels.storeEventCreated, group: "rounds" },
        StoreEventCreatedEvent,
        async function (this: RoundsService, e) {
          const question = (await this.questions.byId(e.question_id)) ?? (await this.questions.pick());
          try {
            await this.repo.create(eventRoundParams(e, question), e.currency, new Date());
          } catch (err) {
            if (!(err instanceof DuplicateKeyError)) throw err;
          }
        },
      ),
    },
  },

  methods: {
    deps(this: RoundsService, ctx: Context): RoundsDeps {
      return {
        repo: this.repo,
        fullRounds: this.fullRounds,
        snapshotOf: (doc, base) => this.snapshotOf(ctx, doc, base),
        invalidate: (id, rev) => cleanCache(this, snapshotKey(id, rev)),
        areFriends: (a, b) => call(ctx, "users.areFriends", { a, b }),
        joined: (doc, userId) => this.joined(ctx, doc, userId),
        trace: traceContextOf(ctx),
        warn: (message, err) => this.logger.warn(message, err),
        now: () => new Date(),
      };
    },

    /**
     * Every gateway drops its kept answers for the round (a plain event: a cache notice, not a fact),
     * then the join's announcement is handed to the relay, which publishes it without the request
     * waiting: it is stored with the seat, which is all the answer needs (the relay keeps what does not
     * get through).
     */
    async joined(this: RoundsService, ctx: Context, doc: RoundDoc, userId: string): Promise<void> {
      await ctx
        .emit(Events.roundMemberJoined, joinedEvent(doc, userId, doc.members[userId]))
        .catch((err: unknown) => this.logger.warn("Could not tell the gateways about a join", err));
      const pending = pendingJoin(doc, userId);
      if (pending) this.relay.handOver(pending);
    },

    /**
     * Profiles and item around a round document, cached per (round, revision). Callers asking for the
     * same revision meanwhile (a batch of joins shares one) share its assembly.
     */
    snapshotOf(
      this: RoundsService,
      ctx: Context,
      doc: RoundRead,
      base?: RoundSnapshot,
    ): Promise<RoundSnapshot> {
      const key = snapshotKey(doc._id, doc.rev);
      const local = this.snapshots.get(key);
      if (local) return Promise.resolve(local);
      let assembly = this.assembling.get(key);
      if (!assembly) {
        assembly = this.assembleSnapshot(ctx, doc, key, base).finally(() => this.assembling.delete(key));
        this.assembling.set(key, assembly);
      }
      return assembly;
    },

    /** Profiles in pages (each answer one packet: shared/contracts/paging), one call for most rounds. */
    async profilesOf(this: RoundsService, ctx: Context, ids: string[]): Promise<ProfilesResult> {
      const pages = pagesOf(ids, PROFILES_PAGE_MAX);
      if (pages.length === 1) return call(ctx, "users.profiles", { ids: pages[0] });
      const answers = await Promise.all(pages.map((page) => call(ctx, "users.profiles", { ids: page })));
      return Object.assign({}, ...answers) as ProfilesResult;
    },

    /**
     * Kept (here and in the shared cacher) until one lifetime after its profiles were read, not after
     * this assembly: a snapshot derived from an earlier revision's is never older than a fresh one.
     */
    async assembleSnapshot(
      this: RoundsService,
      ctx: Context,
      doc: RoundRead,
      key: string,
      base?: RoundSnapshot,
    ): Promise<RoundSnapshot> {
      const cacher = this.broker.cacher;
      const cached = cacher ? ((await cacher.get(key)) as RoundSnapshot | null) : null;
      if (cached) {
        this.snapshots.set(key, cached);
        return cached;
      }
      const now = Date.now();
      const ttlMs = this.config.cacheTtlSeconds * 1000;
      const derived =
        base && (await deriveSnapshot(base, doc, now, ttlMs, (ids) => this.profilesOf(ctx, ids)));
      let snap = derived;
      if (!snap) {
        const [profiles, item] = await Promise.all([
          this.profilesOf(ctx, profileIdsOf(doc)),
          call(ctx, "stores.item", { id: doc.item_id }),
        ]);
        snap = buildSnapshot(doc, profiles, item, now);
      }
      const kept = Date.now();
      const leftMs = snap.assembled_at + ttlMs - kept;
      this.snapshots.set(key, snap, kept, leftMs);
      if (cacher) await cacher.set(key, snap, Math.max(1, Math.ceil(leftMs / 1000)));
      return snap;
    },
  },

  created(this: RoundsService) {
    this.config = serviceConfig(this);
    this.fullRounds = new FullRounds();
    this.answers = new RoundAnswers();
    // No longer than the shared cacher keeps them (a profile change other than a removal shows as late).
    this.assembling = new Map();
    this.snapshots = new LocalCache(Math.min(this.config.cacheTtlSeconds, 60) * 1000, 10_000);
  },

  async started(this: RoundsService) {
    const store = await serviceStore(this);
    this.repo = new RoundsRepository(store);
    this.questions = new QuestionsRepository(store);
    await this.repo.init();
    await this.questions.ensureCatalog();
    this.relay = startOutboxRelay(this, this.repo.outbox);
    this.outboxSweeper = startOutboxSweeper(this, this.repo.outbox);
  },

  async stopped(this: RoundsService) {
    await this.outboxSweeper?.stop();
    await this.relay?.stop();
  },
};

export default RoundsServiceSchema;
