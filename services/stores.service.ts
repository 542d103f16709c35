/**
 * stores: stores with their managers, their items (products and event items) and the items' pictures.
 * Rounds read items through `item` (cached). Store events are created from a multipart upload whose
 * picture the gateway sends here in acknowledged chunks (`stageBegin`/`stageChunk`/`stageEnd`) before
 * `createEvent`; `store.event.created` follows. A request's Idempotency-Key is taken with the permission
 * check and given back by `createEvent` (or `releaseEventKey`): stores/event-keys.repository.ts.
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import { ReadinessMixin } from "../shared/runtime/readiness";
import type { Readable } from "node:stream";
import { call, type ParamsOf, type ResultOf } from "../shared/contracts";
import type { AuthMeta } from "../shared/contracts/common";
import {
  CreateEventParams,
  CreateItemParams,
  CreateStoreParams,
  EventPermissionParams,
  GetItemParams,
  MediaParams,
  ReleaseEventKeyParams,
  REPLAYED_HEADER,
  StageBeginParams,
  type StagedPicture,
} from "../shared/contracts/stores";
import type { Config } from "../shared/config";
import {
  BadRequestError,
  IdempotencyKeyBusyError,
  NotAuthenticatedError,
  NotFoundError,
} from "../shared/errors";
import { noRetry, serviceConfig, serviceStore } from "../shared/runtime";
import type { OutboxRelay } from "../shared/outbox";
import { startOutboxRelay, startOutboxSweeper } from "../shared/runtime/start-outbox-relay";
import { Sweeper } from "../shared/runtime/sweeper";
import { traceContextOf } from "../shared/tracing/propagation";
import type { BlobStore } from "./stores/blob-store";
import {
  EVENT_KEY_TTL_MS,
  EventKeysRepository,
  eventKeyId,
  keyLeaseMs,
} from "./stores/event-keys.repository";
import { MEDIA_SWEEP_INTERVAL_MS, mediaSweepTasks, STAGED_RETENTION_MS } from "./stores/media-sweep";
import { openBlobStore } from "./stores/open-blob-store";
import { DEFAULT_CURRENCY } from "./stores/countries";
import { createOrReplayStoreEvent, managedStore } from "./stores/store-events";
import { StoresRepository, toItemInfo, toStoreInfo } from "./stores/stores.repository";

/** Chunks are bytes with a binary serializer; JSON turns a Buffer into `{type: "Buffer", data: [...]}`. */
function toBuffer(chunk: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk);
  const data = (chunk as { data?: number[] } | null)?.data;
  if (Array.isArray(data)) return Buffer.from(data);
  throw new BadRequestError("Upload chunk is not binary data");
}

interface MediaMeta {
  $responseType?: string;
  $responseHeaders?: Record<string, string>;
}

interface StoresService extends Service {
  config: Config;
  repo: StoresRepository;
  eventKeys: EventKeysRepository;
  blobs: BlobStore;
  relay: OutboxRelay;
  /**
   * Staged uploads and pictures no item shows, past `stagedRetentionMs`, and expired
   * Idempotency-Keys (EVENT_KEY_TTL_MS): at start and hourly.
   */
  retention: Sweeper;
  /** Outbox leftovers past OUTBOX_RETENTION_MS (shared/outbox/expiry). */
  outboxSweeper: Sweeper;
}

const StoresServiceSchema: ServiceSchema<Record<string, never>, StoresService> = {
  name: "stores",

  mixins: [ReadinessMixin],

  actions: {
    item: {
      visibility: "public",
      params: GetItemParams,
      cache: { keys: ["id"] },
      async handler(
        this: StoresService,
        ctx: Context<ParamsOf<"stores.item">>,
      ): Promise<ResultOf<"stores.item">> {
        const item = await this.repo.findItem(ctx.params.id);
        const store = item && (await this.repo.findStore(item.store_id));
        if (!item || !store) throw new NotFoundError("Item not found");
        return toItemInfo(item, store);
      },
    },

    createStore: {
      retryPolicy: noRetry,
      visibility: "public",
      params: CreateStoreParams,
      async handler(
        this: StoresService,
        ctx: Context<ParamsOf<"stores.createStore">>,
      ): Promise<ResultOf<"stores.createStore">> {
        const doc = await this.repo.createStore(ctx.params, DEFAULT_CURRENCY, new Date());
        return { ...toStoreInfo(doc), manager_ids: doc.manager_ids };
      },
    },

    createItem: {
      retryPolicy: noRetry,
      visibility: "public",
      params: CreateItemParams,
      async handler(
        this: StoresService,
        ctx: Context<ParamsOf<"stores.createItem">>,
      ): Promise<ResultOf<"stores.createItem">> {
        const store = await this.repo.findStore(ctx.params.store_id);
        if (!store) throw new NotFoundError("Store not found");
        return toItemInfo(await this.repo.createItem(ctx.params, new Date()), store);
      },
    },

    /**
     * Called by the gateway before it reads an upload: 404 unknown store, 403 not a manager; with an
     * Idempotency-Key, takes it for the request's lease (409 with Retry-After while another holds it).
     * Safe to repeat: the same lease takes the key again.
     */
    checkEventPermission: {
      visibility: "public",
      params: EventPermissionParams,
      async handler(
        this: StoresService,
        ctx: Context<ParamsOf<"stores.checkEventPermission">>,
      ): Promise<ResultOf<"stores.checkEventPermission">> {
        const { store_id, user_id, idempotency_key: key, lease } = ctx.params;
        const store = await managedStore(this.repo, store_id, user_id);
        if (key !== undefined) {
          if (lease === undefined) throw new BadRequestError("An Idempotency-Key needs a lease");
          const claim = await this.eventKeys.claim(
            eventKeyId(user_id, key),
            lease,
            new Date(),
            keyLeaseMs(this.config),
            EVENT_KEY_TTL_MS,
          );
          if (!claim.claimed) throw new IdempotencyKeyBusyError();
        }
        return { store_id: store._id };
      },
    },

    /** The gateway gives a key back when its request failed before `createEvent` answered. */
    releaseEventKey: {
      visibility: "public",
      params: ReleaseEventKeyParams,
      async handler(
        this: StoresService,
        ctx: Context<ParamsOf<"stores.releaseEventKey">>,
      ): Promise<ResultOf<"stores.releaseEventKey">> {
        const { user_id, idempotency_key, lease } = ctx.params;
        return {
          released: await this.eventKeys.release(eventKeyId(user_id, idempotency_key), lease, new Date()),
        };
      },
    },

    /**
     * main_picture arrives in chunks, one call each: the gateway sends the next chunk only when this
     * one is written, so memory stays bounded on both sides also across the transporter (Moleculer's
     * own streams have no flow control). `stageBegin` names the node; the chunks go to that node.
     */
    stageBegin: {
      retryPolicy: noRetry,
      visibility: "public",
      params: StageBeginParams,
      async handler(
        this: StoresService,
        ctx: Context<StageBeginParams>,
      ): Promise<{ staged_id: string; node_id: string }> {
        const stagedId = await this.blobs.begin({ sha256: ctx.params.sha256 === true });
        return { staged_id: stagedId, node_id: this.broker.nodeID };
      },
    },

    stageChunk: {
      retryPolicy: noRetry,
      visibility: "public",
      async handler(this: StoresService, ctx: Context<{ staged_id: string; chunk: unknown }>) {
        const chunk = toBuffer(ctx.params.chunk);
        await this.blobs.append(String(ctx.params.staged_id), chunk, this.config.pictureMaxBytes);
        return true;
      },
    },

    stageEnd: {
      retryPolicy: noRetry,
      visibility: "public",
      async handler(this: StoresService, ctx: Context<{ staged_id: string }>): Promise<StagedPicture> {
        const staged = await this.blobs.finish(String(ctx.params.staged_id));
        const picture: StagedPicture = { staged_id: staged.stagedId, size: staged.size, mime: staged.mime };
        if (staged.sha256) picture.sha256 = staged.sha256;
        return picture;
      },
    },

    discardStaged: {
      visibility: "public",
      async handler(this: StoresService, ctx: Context<{ staged_id: string }>) {
        await this.blobs.discard(String(ctx.params.staged_id));
        return { discarded: true };
      },
    },

    /**
     * POST /stores/{store_id}/events, after the gateway staged the picture. With an Idempotency-Key the
     * answer may be an earlier request's (header Idempotent-Replayed); the key is given back either way.
     */
    createEvent: {
      retryPolicy: noRetry,
      params: CreateEventParams,
      async handler(
        this: StoresService,
        ctx: Context<ParamsOf<"stores.createEvent">, AuthMeta & MediaMeta>,
      ): Promise<ResultOf<"stores.createEvent">> {
        const user = ctx.meta.user;
        if (!user) throw new NotAuthenticatedError();
        const { idempotency } = ctx.params;
        try {
          const outcome = await createOrReplayStoreEvent(
            {
              repo: this.repo,
              blobs: this.blobs,
              pickQuestion: () => call(ctx, "rounds.pickQuestion", {}),
              announce: (pending) => this.relay.deliver(pending),
              eventIdOfKey: (userId, key) => this.eventKeys.eventIdOf(eventKeyId(userId, key), new Date()),
              publicUrl: this.config.publicUrl,
              now: () => new Date(),
            },
            {
              storeId: ctx.params.store_id,
              userId: user.id,
              fields: ctx.params.fields,
              picture: ctx.params.picture,
              ...(idempotency ? { idempotencyKey: idempotency.key } : {}),
              trace: traceContextOf(ctx),
            },
          );
          if (outcome.replayed) ctx.meta.$responseHeaders = { [REPLAYED_HEADER]: "true" };
          return outcome.event;
        } finally {
          // Before the answer leaves, so a retry sent on receiving it finds the key free.
          if (idempotency) {
            await this.eventKeys
              .release(eventKeyId(user.id, idempotency.key), idempotency.lease, new Date())
              .catch((err: unknown) => this.logger.warn("Giving an Idempotency-Key back failed", err));
          }
        }
      },
    },

    /** GET /media/{name}: an uploaded picture, streamed. */
    media: {
      params: MediaParams,
      async handler(
        this: StoresService,
        ctx: Context<ParamsOf<"stores.media">, MediaMeta>,
      ): Promise<Readable> {
        const blob = await this.blobs.open(ctx.params.name);
        if (!blob) throw new NotFoundError("Not Found");
        ctx.meta.$responseType = blob.mime;
        ctx.meta.$responseHeaders = {
          "Content-Length": String(blob.size),
          "Cache-Control": "public, max-age=31536000, immutable",
        };
        return blob.stream;
      },
    },
  },

  created(this: StoresService) {
    this.config = serviceConfig(this);
  },

  async started(this: StoresService) {
    const store = await serviceStore(this);
    this.repo = new StoresRepository(store);
    await this.repo.init();
    this.eventKeys = new EventKeysRepository(store);
    await this.eventKeys.init();
    // GridFS with MONGO_URI, else DATA_DIR/media (stores/open-blob-store.ts).
    this.blobs = await openBlobStore(store, this.config);
    const retentionMs = STAGED_RETENTION_MS;
    this.retention = new Sweeper(
      [
        ...mediaSweepTasks(this.blobs, this.repo, retentionMs, (name) =>
          this.logger.warn(`Removed picture ${name}: no item shows it (its event was never written)`),
        ),
        { name: "expired Idempotency-Keys", run: (now) => this.eventKeys.deleteExpired(now) },
      ],
      {
        intervalMs: MEDIA_SWEEP_INTERVAL_MS,
        warn: (message, err) => this.logger.warn(message, err),
        report: (removed) =>
          this.logger.info("Swept media and Idempotency-Keys past their retention", removed),
      },
    );
    this.retention.start();
    this.relay = startOutboxRelay(this, this.repo.outbox);
    this.outboxSweeper = startOutboxSweeper(this, this.repo.outbox);
  },

  async stopped(this: StoresService) {
    await this.retention?.stop();
    await this.outboxSweeper?.stop();
    await this.relay?.stop();
  },
};

export default StoresServiceSchema;
