/**
 * notifier: accepts multicast push requests (recorded durably, answered 202 before anything is sent) and
 * delivers them asynchronously through firebase-admin in batches. With NATS the jobs travel on a durable
 * JetStream channel (@moleculer/channels: acknowledged after the work is recorded, bounded in flight,
 * dead-lettered after MAX_DELIVERIES attempts); embedded, the job records are the queue.
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import { ReadinessMixin } from "../shared/runtime/readiness";
import { call, type ParamsOf, type ResultOf } from "../shared/contracts";
import {
  JobParams,
  SendMulticastCall,
  StageRecipientsParams,
  type JobMessage,
  type NotificationJob,
} from "../shared/contracts/notifier";
import { pagesOf } from "../shared/contracts/paging";
import type { Config } from "../shared/config";
import { NotFoundError } from "../shared/errors";
import { noRetry, serviceConfig, serviceStore } from "../shared/runtime";
import { STOPPING_EVENT } from "../shared/runtime/shutdown";
import { acceptMulticast, stageRecipients, type AcceptDeps } from "./notifier/accept";
import { BATCH_SIZE, deliverJob, RETRY_BASE_MS, TOKEN_RETRIES, type DeliverDeps } from "./notifier/deliver";
import { MAX_DELIVERIES } from "./notifier/delivery-bounds";
import { JobsRepository, type JobDoc, type Retention } from "./notifier/jobs.repository";
import { NOTIFIER_SWEEP_INTERVAL_MS, notifierSweepTasks, RETENTION } from "./notifier/retention";
import { Sweeper } from "../shared/runtime/sweeper";
import { watchJobLag } from "./notifier/job-metrics";
import { LocalJobQueue } from "./notifier/local-queue";
import { transportFor, type PushTransport } from "./notifier/transport";
import { channelSender, hasDurableChannels } from "../shared/runtime/channels";

export const JOBS_CHANNEL = "notifier.jobs";

interface NotifierService extends Service {
  config: Config;
  jobs: JobsRepository;
  transport: PushTransport;
  queue: LocalJobQueue | null;
  stopping: boolean;
  markStopping: () => void;
  sweepTimer: NodeJS.Timeout | null;
  retention: Retention;
  /** Attempts at a job before it is failed (delivery-bounds.ts; a test's stand-in sets its own). */
  maxDeliveries: number;
  /** Deletes what has outlived its retention (services/notifier/retention.ts). */
  retentionSweep: Sweeper | null;
  acceptDeps(): AcceptDeps;
  /** Stops the job lag readings (metrics on only; notifier/job-metrics). */
  stopJobMetrics: (() => void) | null;
  deliverDeps(): DeliverDeps;
  deliver(jobId: string): Promise<void>;
  unfinished(jobId: string): Promise<boolean>;
  enqueue(jobId: string): Promise<void>;
}

interface ApiKeyMeta {
  apiKey?: { key_id: string } | null;
  $statusCode?: number;
}

/** The JetStream message the channels adapter passes next to the payload. */
interface JetStreamMessage {
  working?: () => void;
  /** Gives the message back for redelivery after `delayMs`; the adapter's own ack after it is then ignored. */
  nak?: (delayMs?: number) => void;
}

/**
 * A job given back by a stopping notifier is redelivered after this long: enough for the stopping
 * process's own subscription to be gone (the adapter drains it within about a second once its last
 * job is given back; a redelivery landing on it would be ignored and wait out the whole window), short
 * enough for another notifier to take over at once.
 */
const HAND_BACK_DELAY_MS = 3000;

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

export const toJobView = (j: JobDoc): NotificationJob => ({
  id: j._id,
  status: j.status,
  recipients: j.recipients,
  users_without_devices: j.users_without_devices,
  devices: j.devices,
  sent: j.sent,
  failed: j.failed,
  pruned: j.pruned,
  created_at: iso(j.created_at) as string,
  started_at: iso(j.started_at),
  finished_at: iso(j.finished_at),
  error: j.error,
});

/**
 * Whether the API key `keyId` may read `job`: the key that made it, and no other. A job recorded before
 * its maker was kept names none (nor does one made by a call that named no key), and no key reads it:
 * it is deleted with its retention.
 */
export const readableBy = (job: Pick<JobDoc, "created_by">, keyId: string | undefined): boolean =>
  !!job.created_by && job.created_by === keyId;

const NotifierServiceSchema: ServiceSchema<Record<string, never>, NotifierService> = {
  name: "notifier",

  mixins: [ReadinessMixin],

  // Delivery asks the users service for device tokens: consume jobs only once it is reachable.
  dependencies: ["users"],

  actions: {
    /**
     * POST /notifications/send-multicast → 202 {id, status, recipients}. A list too long for one packet
     * was staged before, page by page (`stageRecipients`); this call then carries its last page.
     */
    sendMulticast: {
      retryPolicy: noRetry,
      params: SendMulticastCall,
      async handler(
        this: NotifierService,
        ctx: Context<ParamsOf<"notifier.sendMulticast">, ApiKeyMeta>,
      ): Promise<ResultOf<"notifier.sendMulticast">> {
        const accepted = await acceptMulticast(this.acceptDeps(), ctx.params, ctx.meta.apiKey?.key_id ?? "");
        ctx.meta.$statusCode = 202;
        return accepted;
      },
    },

    /** One page of a multicast's recipients, stored ahead of its `sendMulticast` (the gateway's calls). */
    stageRecipients: {
      retryPolicy: noRetry,
      visibility: "public",
      params: StageRecipientsParams,
      handler(
        this: NotifierService,
        ctx: Context<ParamsOf<"notifier.stageRecipients">, ApiKeyMeta>,
      ): Promise<ResultOf<"notifier.stageRecipients">> {
        return stageRecipients(this.acceptDeps(), ctx.params, ctx.meta.apiKey?.key_id ?? "");
      },
    },

    /**
     * GET /notifications/{job_id} (outside the spec): only for the API key that made the job; to any
     * other, the same 404 as an unknown job (docs/decisions/0019).
     */
    job: {
      params: JobParams,
      async handler(
        this: NotifierService,
        ctx: Context<ParamsOf<"notifier.job">, ApiKeyMeta>,
      ): Promise<ResultOf<"notifier.job">> {
        const job = await this.jobs.find(ctx.params.job_id);
        if (!job || !readableBy(job, ctx.meta.apiKey?.key_id)) {
          throw new NotFoundError("Notification job not found");
        }
        return toJobView(job);
      },
    },
  },

  // Used only when the broker has the channels middleware (a NATS transporter, see app/broker-options.ts).
  channels: {
    [JOBS_CHANNEL]: {
      group: "notifier",
      maxInFlight: 2,
      async handler(this: NotifierService, msg: JobMessage, raw?: JetStreamMessage) {
        // A job that reaches a stopping notifier is given back untouched (no attempt counted).
        if (this.stopping && raw?.nak) {
          raw.nak(HAND_BACK_DELAY_MS);
          return;
        }
        // The adapter signals "in progress" once, on receipt; a job can outlast the acknowledgement
        // window, so keep signalling while it runs, or JetStream would hand it out a second time.
        const everyMs = (this.config.notifierAckWaitSeconds * 1000) / 3;
        const heartbeat = raw?.working ? setInterval(() => raw.working?.(), everyMs) : null;
        let failure: { err: unknown } | null = null;
        try {
          await this.deliver(msg.job_id);
        } catch (err) {
          failure = { err };
        } finally {
          if (heartbeat) clearInterval(heartbeat);
        }
        // Stopped between batches (the batches in flight are recorded): the job is unfinished, and the
        // adapter would acknowledge it on return. Give it back so it resumes elsewhere without waiting
        // out the acknowledgement window.
        if (this.stopping && (await this.unfinished(msg.job_id))) {
          if (!raw?.nak) throw new Error(`Stopped before job ${msg.job_id} finished`);
          raw.nak(HAND_BACK_DELAY_MS);
          return;
        }
        if (failure) throw failure.err;
      },
    },
  },

  methods: {
    acceptDeps(this: NotifierService): AcceptDeps {
      return {
        jobs: this.jobs,
        enqueue: (id) => this.enqueue(id),
        warn: (m, e) => this.logger.warn(m, e),
        maxRecipients: this.config.multicastMaxRecipients,
        now: () => new Date(),
      };
    },

    deliverDeps(this: NotifierService): DeliverDeps {
      return {
        jobs: this.jobs,
        deviceTokens: (params) => call(this.broker, "users.deviceTokens", params),
        prune: async (tokens) => {
          let pruned = 0;
          // A batch's dead tokens, in pages bounded by bytes as well (shared/contracts/paging).
          for (const page of pagesOf(tokens, BATCH_SIZE))
            pruned += (await call(this.broker, "users.pruneTokens", { tokens: page })).pruned;
          return pruned;
        },
        retention: this.retention,
        transport: this.transport,
        concurrency: this.config.pushBatchConcurrency,
        maxRetries: TOKEN_RETRIES,
        retryBaseMs: RETRY_BASE_MS,
        sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
        now: () => new Date(),
        stopping: () => this.stopping,
      };
    },

    /** One delivery attempt; past `maxDeliveries` the job is failed instead (and acknowledged). */
    async deliver(this: NotifierService, jobId: string): Promise<void> {
      const job = await this.jobs.find(jobId);
      if (!job || job.status === "done" || job.status === "failed") return;
      if (job.deliveries >= this.maxDeliveries) {
        await this.jobs.fail(
          jobId,
          `gave up after ${job.deliveries} delivery attempts`,
          new Date(),
          this.retention,
        );
        return;
      }
      try {
        await deliverJob(this.deliverDeps(), jobId);
      } catch (err) {
        // The last allowed attempt failed: record it (the channel dead-letters the message as well).
        const after = await this.jobs.find(jobId);
        if (after && after.deliveries >= this.maxDeliveries) {
          await this.jobs.fail(
            jobId,
            `gave up after ${after.deliveries} delivery attempts: ${(err as Error).message}`,
            new Date(),
            this.retention,
          );
        } else if (after && !this.stopping) {
          // JetStream redelivers a failed message at once: wait first, so attempts are spread out
          // (1 s, 2 s, 4 s … up to 30 s) and a passing outage does not use them all up.
          await new Promise((r) =>
            setTimeout(r, Math.min(30_000, 1000 * 2 ** (after.deliveries - 1))).unref?.(),
          );
        }
        throw err;
      }
    },

    async unfinished(this: NotifierService, jobId: string): Promise<boolean> {
      const job = await this.jobs.find(jobId);
      return !!job && (job.status === "queued" || job.status === "sending");
    },

    async enqueue(this: NotifierService, jobId: string): Promise<void> {
      const send = channelSender(this.broker);
      const message: JobMessage = { job_id: jobId };
      if (send) await send(JOBS_CHANNEL, message);
      else this.queue?.kick();
    },
  },

  created(this: NotifierService) {
    this.config = serviceConfig(this);
    this.stopping = false;
    this.sweepTimer = null;
    this.retentionSweep = null;
    this.retention = RETENTION;
    this.maxDeliveries = MAX_DELIVERIES;
    this.stopJobMetrics = null;
    this.markStopping = () => {
      this.stopping = true;
    };
  },

  async started(this: NotifierService) {
    this.jobs = new JobsRepository(await serviceStore(this));
    await this.jobs.init();
    this.stopJobMetrics = watchJobLag(this.broker, this.jobs);
    this.transport = transportFor(this.config, (line) => this.logger.info(line));
    const channels = hasDurableChannels(this.broker);
    this.queue = channels
      ? null
      : new LocalJobQueue(
          async () => (await this.jobs.unfinished()).map((j) => j._id),
          (id) => this.deliver(id),
          async (id, err) => this.logger.warn(`Delivery of ${id} failed; it will be tried again`, err),
        );
    // Jobs accepted but never handed over (a crash in between): the queue (embedded) or the channel.
    if (channels) {
      const sweep = async () => {
        const stale = Date.now() - 60_000;
        for (const job of await this.jobs.unfinished()) {
          if (job.status === "queued" && new Date(job.created_at).getTime() < stale) {
            await this.enqueue(job._id).catch((err) => this.logger.warn(`Could not enqueue ${job._id}`, err));
          }
        }
      };
      // Queued at start (a crash between recording and publishing), and every minute after.
      for (const job of await this.jobs.unfinished()) {
        if (job.status === "queued") await this.enqueue(job._id).catch(() => undefined);
      }
      this.sweepTimer = setInterval(() => void sweep().catch(() => undefined), 60_000).unref();
    }
    this.queue?.kick();
    this.retentionSweep = new Sweeper(notifierSweepTasks(this.jobs, this.retention), {
      intervalMs: NOTIFIER_SWEEP_INTERVAL_MS,
      warn: (message, err) => this.logger.warn(message, err),
      report: (removed) => this.logger.info("Swept notifier data past its retention", removed),
    });
    this.retentionSweep.start();
    // From the first moment of a stop no new batch starts: the ones in flight finish and are recorded
    // while Moleculer waits, and the job is given back (channel) or resumed at the next start (embedded).
    this.broker.localBus.on(STOPPING_EVENT, this.markStopping);
  },

  async stopped(this: NotifierService) {
    this.broker.localBus.off(STOPPING_EVENT, this.markStopping);
    this.stopping = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    await this.retentionSweep?.stop();
    this.stopJobMetrics?.();
    await this.queue?.stop();
    await this.transport?.close();
  },
};

export default NotifierServiceSchema;
