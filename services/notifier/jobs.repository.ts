/**
 * Notification jobs and their batches. A job is recorded before the request is answered; its token
 * batches are planned once (then fixed, so a redelivered job resends nothing already sent) and each
 * batch moves from pending to done in one conditional update.
 */
import { DuplicateKeyError, type Collection, type Store } from "../../shared/storage";
import type { JobStatus, SendMulticastParams } from "../../shared/contracts/notifier";

export interface JobCounts {
  users_without_devices: number;
  devices: number;
  sent: number;
  failed: number;
  pruned: number;
}

export interface JobDoc extends JobCounts {
  _id: string;
  status: JobStatus;
  request_hash: string;
  title: string;
  desc: string | null;
  picture: string | null;
  keys: Record<string, string | number | boolean> | null;
  recipients: number;
  planned: boolean;
  deliveries: number;
  error: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

/**
 * The user ids of a job, apart from the job: read once when the batches are planned, never rewritten
 * (the job document changes with every batch and must stay small; NeDB rewrites a changed document
 * whole).
 */
interface RecipientsDoc {
  _id: string;
  user_ids: string[];
}

export interface BatchDoc {
  _id: string; // `${job}:${index}`
  job_id: string;
  index: number;
  tokens: string[];
  status: "pending" | "done";
  sent: number;
  failed: number;
  pruned: number;
}

export class JobsRepository {
  private readonly jobs: Collection<JobDoc>;
  private readonly batches: Collection<BatchDoc>;
  private readonly recipients: Collection<RecipientsDoc>;

  constructor(store: Store) {
    this.jobs = store.collection<JobDoc>("notification_jobs");
    this.recipients = store.collection<RecipientsDoc>("notification_recipients");
    this.batches = store.collection<BatchDoc>("notification_batches");
  }

  async init(): Promise<void> {
    await this.jobs.createIndex({ fields: ["status"] });
    await this.batches.createIndex({ fields: ["job_id"] });
  }

  /** Records a job; resolves to the existing one when its id (from an Idempotency-Key) is taken. */
  async create(
    id: string,
    p: SendMulticastParams,
    requestHash: string,
    now: Date,
  ): Promise<{ job: JobDoc; created: boolean }> {
    const doc: JobDoc = {
      _id: id,
      status: "queued",
      request_hash: requestHash,
      title: p.title,
      desc: p.desc ?? null,
      picture: p.picture ?? null,
      keys: p.keys ?? null,
      recipients: p.user_ids.length,
      planned: false,
      deliveries: 0,
      error: null,
      users_without_devices: 0,
      devices: 0,
      sent: 0,
      failed: 0,
      pruned: 0,
      created_at: now,
      started_at: null,
      finished_at: null,
    };
    try {
      // Recipients first: a job is only ever visible with its recipients in place.
      await this.recipients.insertOne({ _id: id, user_ids: p.user_ids }).catch((err: unknown) => {
        if (!(err instanceof DuplicateKeyError)) throw err;
      });
      return { job: await this.jobs.insertOne(doc), created: true };
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      const existing = await this.find(id);
      if (!existing) throw err;
      return { job: existing, created: false };
    }
  }

  async recipientsOf(id: string): Promise<string[]> {
    return (await this.recipients.findOne({ _id: id }))?.user_ids ?? [];
  }

  find(id: string): Promise<JobDoc | null> {
    return this.jobs.findOne({ _id: id });
  }

  /** Jobs not finished (after a restart in embedded mode, these are the queue). */
  unfinished(): Promise<JobDoc[]> {
    return this.jobs.find({ status: { $in: ["queued", "sending"] } }, { sort: { created_at: 1 } });
  }

  /** How many jobs are in `status`, and when the oldest of them was accepted (the notifier's metrics). */
  async lagOf(status: "queued" | "sending"): Promise<{ count: number; oldest: Date | null }> {
    const [count, first] = await Promise.all([
      this.jobs.count({ status }),
      this.jobs.find({ status }, { sort: { created_at: 1 }, limit: 1 }),
    ]);
    return { count, oldest: first.length > 0 ? new Date(first[0].created_at) : null };
  }

  /** Counts a delivery attempt and moves a queued job to sending. */
  async startDelivery(id: string, now: Date): Promise<JobDoc | null> {
    await this.jobs.updateOne(
      { _id: id, status: "queued" },
      { $set: { status: "sending", started_at: now } },
    );
    return this.jobs.findOneAndUpdate({ _id: id, status: "sending" }, { $inc: { deliveries: 1 } });
  }

  /** Writes the batches once; a second planning of the same job finds them and writes nothing. */
  async plan(job: JobDoc, batches: string[][], counts: Pick<JobCounts, "devices" | "users_without_devices">) {
    if (job.planned) return;
    const docs: BatchDoc[] = batches.map((tokens, index) => ({
      _id: `${job._id}:${index}`,
      job_id: job._id,
      index,
      tokens,
      status: "pending",
      sent: 0,
      failed: 0,
      pruned: 0,
    }));
    // Nothing is sent before a job is planned, so a plan interrupted by a crash is simply redone whole
    // (the tokens may have changed meanwhile; two half plans must not mix).
    await this.batches.deleteMany({ job_id: job._id });
    await this.batches.insertMany(docs);
    await this.jobs.updateOne({ _id: job._id }, { $set: { planned: true, ...counts } });
  }

  pendingBatches(jobId: string): Promise<BatchDoc[]> {
    return this.batches.find({ job_id: jobId, status: "pending" }, { sort: { index: 1 } });
  }

  /** Marks a batch sent once; false when it was already (a redelivery raced it). */
  async completeBatch(b: BatchDoc, result: Pick<BatchDoc, "sent" | "failed" | "pruned">): Promise<boolean> {
    const matched = await this.batches.updateOne(
      { _id: b._id, status: "pending" },
      { $set: { status: "done", ...result } },
    );
    if (matched === 1) await this.jobs.updateOne({ _id: b.job_id }, { $inc: { ...result } });
    return matched === 1;
  }

  /** Final counts from the batches themselves (exact even if a crash skipped a progress update). */
  async finish(jobId: string, now: Date): Promise<void> {
    const done = await this.batches.find({ job_id: jobId });
    const sum = (k: "sent" | "failed" | "pruned") => done.reduce((n, b) => n + b[k], 0);
    await this.jobs.updateOne(
      { _id: jobId },
      {
        $set: {
          status: "done",
          finished_at: now,
          sent: sum("sent"),
          failed: sum("failed"),
          pruned: sum("pruned"),
        },
      },
    );
  }

  async fail(jobId: string, error: string, now: Date): Promise<void> {
    await this.jobs.updateOne(
      { _id: jobId, status: { $in: ["queued", "sending"] } },
      { $set: { status: "failed", error, finished_at: now } },
    );
  }
}
