/**
 * Notification jobs, their recipients and their batches. A job is recorded before the request is
 * answered, once its recipients are stored: in pages of at most RECIPIENT_PAGE_MAX user ids and 256 KiB
 * (a recipient set, `<job id>.<random>`), so no document nears MongoDB's 16 MB at the 1,000,000-id
 * ceiling. Delivery plans one page at a time: its token batches are written once (then fixed, so a
 * redelivered job resends nothing already sent), and each batch moves from pending to done in one
 * conditional update. How long each of them is kept: docs/decisions/0032-job-queue.md.
 */
import { randomBytes } from "node:crypto";
import { DuplicateKeyError, type Collection, type Store } from "../../shared/storage";
import { pagesOf } from "../../shared/contracts/paging";
import { RECIPIENT_PAGE_MAX, type JobStatus } from "../../shared/contracts/notifier";

export interface JobCounts {
  users_without_devices: number;
  devices: number;
  sent: number;
  failed: number;
  pruned: number;
}

/** A value of a multicast's `keys`. */
export type KeyValue = string | number | boolean;

/** One entry of a multicast's `keys`: its name (the client's, any string) and its value. */
export type KeyPair = [name: string, value: KeyValue];

/** What a job says of the message and of the request it came from (`keys` as the request gave them). */
export interface JobFields {
  title: string;
  desc: string | null;
  picture: string | null;
  keys: Record<string, KeyValue> | null;
}

export interface JobDoc extends JobCounts, Omit<JobFields, "keys"> {
  _id: string;
  status: JobStatus;
  request_hash: string;
  /**
   * The request's `keys` as [name, value] pairs, in order: a client's name is never a field name of the
   * stored document, so any name (`a.b`, `$x`, `__proto__`) is stored and read back as it came, on every
   * engine (docs/decisions/0028-multicast-request.md).
   */
  key_pairs?: KeyPair[] | null;
  /** Jobs recorded before key_pairs: `keys` as an object (names the store accepted as field names). */
  keys?: Record<string, KeyValue> | null;
  /**
   * The id of the API key that made the job: the only one that may read it. Absent on jobs recorded
   * before this was kept: no key may read them (docs/decisions/0019-api-keys.md).
   */
  created_by?: string;
  recipients: number;
  /**
   * The job's recipient set and its number of pages. Absent on jobs recorded before recipients were
   * paged: their user ids are one document, `_id` the job's (read as pages all the same).
   */
  recipient_set?: string;
  recipient_pages?: number;
  /** Every page planned (its batches written). */
  planned: boolean;
  /** Pages planned so far, in order; absent on a job planned whole before pages existed. */
  planned_pages?: number;
  deliveries: number;
  error: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  /**
   * Set when the job ends: when its recipients and its batches are deleted (null again once they
   * are), and until when the job itself is kept. `expires_at` takes that date once the recipients and
   * batches are gone; the job is deleted then (by the sweep, and on MongoDB by a TTL index as well).
   */
  recipients_expire_at?: Date | null;
  batches_expire_at?: Date | null;
  retain_until?: Date | null;
  expires_at?: Date | null;
}

/** One page of a recipient set (index -1: the set's header, while no job has taken it). */
export interface RecipientPageDoc {
  _id: string; // `${set_id}:${index}`, the header `${set_id}:open`
  set_id: string;
  index: number;
  user_ids: string[];
  staged_at: Date;
}

/** The user ids of a job recorded before pages: one document under the job's id. */
interface LegacyRecipientsDoc {
  _id: string;
  user_ids: string[];
}

export interface BatchDoc {
  _id: string; // `${job}:${page}:${index}` (`${job}:${index}` for a job planned whole, before pages)
  job_id: string;
  /** The recipient page whose tokens these are (absent on batches planned before pages). */
  page?: number;
  index: number;
  tokens: string[];
  status: "pending" | "done";
  sent: number;
  failed: number;
  pruned: number;
  planned_at?: Date;
}

export interface Retention {
  jobMs: number;
  batchesMs: number;
  recipientsMs: number;
}

const headerId = (setId: string) => `${setId}:open`;
const header = (setId: string, now: Date): RecipientPageDoc => ({
  _id: headerId(setId),
  set_id: setId,
  index: -1,
  user_ids: [],
  staged_at: now,
});
const setIdFor = (jobId: string) => `${jobId}.${randomBytes(8).toString("hex")}`;
/** A job's `keys` as pairs, in order, whichever way the job was recorded. */
export const keyPairsOf = (job: Pick<JobDoc, "key_pairs" | "keys">): KeyPair[] =>
  job.key_pairs ?? (job.keys ? Object.entries(job.keys) : []);

/** `keys` as pairs, in order (own names only: `Object.entries` never reads a prototype). */
export const toKeyPairs = (keys: Record<string, KeyValue> | null): KeyPair[] | null =>
  keys ? Object.entries(keys) : null;

/** The job a recipient set was opened for. */
export const jobOfSet = (setId: string): string => setId.split(".")[0];

const ENDED: JobStatus[] = ["done", "failed"];

export class JobsRepository {
  private readonly jobs: Collection<JobDoc>;
  private readonly batches: Collection<BatchDoc>;
  private readonly recipients: Collection<RecipientPageDoc>;

  constructor(store: Store) {
    this.jobs = store.collection<JobDoc>("notification_jobs");
    this.recipients = store.collection<RecipientPageDoc>("notification_recipients");
    this.batches = store.collection<BatchDoc>("notification_batches");
  }

  async init(): Promise<void> {
    await this.jobs.createIndex({ fields: ["status"] });
    // A job past its retention goes even if no notifier sweeps (MongoDB; the sweep does it everywhere).
    await this.jobs.createIndex({ fields: ["expires_at"], expireAfterSeconds: 0 });
    await this.batches.createIndex({ fields: ["job_id"] });
    await this.recipients.createIndex({ fields: ["set_id"] });
  }

  /**
   * Opens a recipient set for the job `jobId` will be, and resolves to its id to stage pages under. The
   * set's header (a small document, index -1) says it is not taken yet; recording the job removes it.
   */
  async openSet(jobId: string, now: Date): Promise<string> {
    const setId = setIdFor(jobId);
    await this.recipients.insertOne(header(setId, now));
    return setId;
  }

  /** Stores one page of a set; staging the same page again stores it again (same content, same id). */
  async stagePage(setId: string, index: number, userIds: string[], now: Date): Promise<void> {
    await this.recipients.updateOne(
      { _id: `${setId}:${index}` },
      { $set: { set_id: setId, index, user_ids: userIds, staged_at: now } },
      { upsert: true },
    );
  }

  /** Stores a whole list as a new set of pages; resolves to the set's id and its number of pages. */
  async stageAll(jobId: string, userIds: string[], now: Date): Promise<{ setId: string; pages: number }> {
    const setId = setIdFor(jobId);
    const pages = pagesOf(userIds, RECIPIENT_PAGE_MAX);
    await this.recipients.insertMany([
      header(setId, now),
      ...pages.map((ids, index) => ({
        _id: `${setId}:${index}`,
        set_id: setId,
        index,
        user_ids: ids,
        staged_at: now,
      })),
    ]);
    return { setId, pages: pages.length };
  }

  /** Page `index` of a set, or null when it was never staged (or was deleted). */
  async page(setId: string, index: number): Promise<string[] | null> {
    return (await this.recipients.findOne({ _id: `${setId}:${index}` }))?.user_ids ?? null;
  }

  /** Drops a set that no job took (a retried request's copy, an abandoned staging). */
  dropSet(setId: string): Promise<number> {
    return this.recipients.deleteMany({ set_id: setId });
  }

  /**
   * Records a job on a stored recipient set, made by the API key `createdBy`; resolves to the existing
   * job when its id (from an Idempotency-Key) is taken. The set's pages are in place before the job is
   * visible.
   */
  async create(
    id: string,
    fields: JobFields,
    recipients: { setId: string; pages: number; count: number },
    requestHash: string,
    now: Date,
    createdBy: string,
  ): Promise<{ job: JobDoc; created: boolean }> {
    const { keys, ...message } = fields;
    const doc: JobDoc = {
      _id: id,
      status: "queued",
      request_hash: requestHash,
      ...message,
      key_pairs: toKeyPairs(keys),
      created_by: createdBy,
      recipients: recipients.count,
      recipient_set: recipients.setId,
      recipient_pages: recipients.pages,
      planned: false,
      planned_pages: 0,
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
      recipients_expire_at: null,
      batches_expire_at: null,
      retain_until: null,
      expires_at: null,
    };
    try {
      const job = await this.jobs.insertOne(doc);
      // The set is taken (a crash before this line leaves the header, which the sweep then drops).
      await this.recipients.deleteOne({ _id: headerId(recipients.setId) });
      return { job, created: true };
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      const existing = await this.find(id);
      if (!existing) throw err;
      return { job: existing, created: false };
    }
  }

  /** How many recipient pages a job has (a job from before pages: its one list, cut as pages are). */
  pageCount(job: JobDoc): number {
    return job.recipient_pages ?? Math.max(1, Math.ceil(job.recipients / RECIPIENT_PAGE_MAX));
  }

  /** The user ids of page `index` of a job (empty when they are gone). */
  async recipientsPage(job: JobDoc, index: number): Promise<string[]> {
    if (job.recipient_set) return (await this.page(job.recipient_set, index)) ?? [];
    const legacy = (await this.recipients.findOne({ _id: job._id })) as LegacyRecipientsDoc | null;
    return (legacy?.user_ids ?? []).slice(index * RECIPIENT_PAGE_MAX, (index + 1) * RECIPIENT_PAGE_MAX);
  }

  /** Every user id of a job, in order (tests and small jobs; delivery reads page by page). */
  async recipientsOf(id: string): Promise<string[]> {
    const job = await this.find(id);
    if (!job) return [];
    const all: string[] = [];
    for (let i = 0; i < this.pageCount(job); i++) all.push(...(await this.recipientsPage(job, i)));
    return all;
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
    // A job recorded before pages and not planned yet is planned page by page from the first.
    await this.jobs.updateOne(
      { _id: id, planned: false, planned_pages: { $exists: false } },
      { $set: { planned_pages: 0 } },
    );
    return this.jobs.findOneAndUpdate({ _id: id, status: "sending" }, { $inc: { deliveries: 1 } });
  }

  /**
   * Writes the batches of recipient page `page` once; resolves to false (writing nothing) when that
   * page was planned already. Pages are planned in order, and nothing of a page is sent before it is
   * planned, so a plan interrupted by a crash is simply redone whole (the tokens may have changed
   * meanwhile; two half plans must not mix).
   */
  async planPage(
    job: JobDoc,
    page: number,
    batches: string[][],
    counts: Pick<JobCounts, "devices" | "users_without_devices">,
    now: Date,
  ): Promise<boolean> {
    if ((job.planned_pages ?? 0) > page) return false;
    const docs: BatchDoc[] = batches.map((tokens, index) => ({
      _id: `${job._id}:${page}:${index}`,
      job_id: job._id,
      page,
      index,
      tokens,
      status: "pending",
      sent: 0,
      failed: 0,
      pruned: 0,
      planned_at: now,
    }));
    await this.batches.deleteMany({ job_id: job._id, page });
    await this.batches.insertMany(docs);
    const planned = page + 1 === this.pageCount(job);
    const matched = await this.jobs.updateOne(
      { _id: job._id, planned_pages: page },
      { $set: { planned_pages: page + 1, planned }, $inc: { ...counts } },
    );
    return matched === 1;
  }

  /** Pending batches of a job, or of one of its pages, in order. */
  pendingBatches(jobId: string, page?: number): Promise<BatchDoc[]> {
    const filter =
      page === undefined ? { job_id: jobId, status: "pending" } : { job_id: jobId, page, status: "pending" };
    return this.batches.find(filter, { sort: { page: 1, index: 1 } });
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

  /**
   * Final counts from the batches themselves (exact even if a crash skipped a progress update), read a
   * page at a time (a page's batches hold its tokens; a whole job's may be hundreds of MB). Sets when
   * the job's recipients, batches and record are deleted.
   */
  async finish(jobId: string, now: Date, retention: Retention): Promise<void> {
    const job = await this.find(jobId);
    if (!job) return;
    const totals = { sent: 0, failed: 0, pruned: 0 };
    const groups: Record<string, unknown>[] =
      job.planned_pages === undefined
        ? [{ job_id: jobId }]
        : Array.from({ length: this.pageCount(job) }, (_, page) => ({ job_id: jobId, page }));
    for (const filter of groups) {
      for (const b of await this.batches.find(filter)) {
        totals.sent += b.sent;
        totals.failed += b.failed;
        totals.pruned += b.pruned;
      }
    }
    await this.jobs.updateOne(
      { _id: jobId },
      { $set: { status: "done", finished_at: now, ...totals, ...expiries(now, retention) } },
    );
  }

  async fail(jobId: string, error: string, now: Date, retention: Retention): Promise<void> {
    await this.jobs.updateOne(
      { _id: jobId, status: { $in: ["queued", "sending"] } },
      { $set: { status: "failed", error, finished_at: now, ...expiries(now, retention) } },
    );
  }

  // --- Retention (services/notifier/retention.ts runs these) ---

  /** Jobs whose `field` date has passed. */
  private due(field: "recipients_expire_at" | "batches_expire_at" | "expires_at", now: Date) {
    // `$ne: null`: NeDB's `$lt` on a date also matches a stored null (shared/storage/port.ts).
    return this.jobs.find({ [field]: { $lt: now, $ne: null } });
  }

  /** Deletes the recipients of jobs past their recipient retention; resolves to the documents deleted. */
  async purgeRecipients(now: Date): Promise<number> {
    let deleted = 0;
    for (const job of await this.due("recipients_expire_at", now)) {
      deleted += await this.recipients.deleteMany(
        job.recipient_set ? { set_id: job.recipient_set } : { _id: job._id },
      );
      await this.jobs.updateOne({ _id: job._id }, { $set: { recipients_expire_at: null } });
    }
    return deleted;
  }

  /** Deletes the batches of jobs past their batch retention; resolves to the documents deleted. */
  async purgeBatches(now: Date): Promise<number> {
    let deleted = 0;
    for (const job of await this.due("batches_expire_at", now)) {
      deleted += await this.batches.deleteMany({ job_id: job._id });
      await this.jobs.updateOne({ _id: job._id }, { $set: { batches_expire_at: null } });
    }
    return deleted;
  }

  /**
   * A job whose recipients and batches are gone gets the date it is deleted at (`expires_at`): only
   * then, so neither the sweep nor MongoDB's TTL index ever deletes a job before what hangs off it.
   */
  async settleExpiries(): Promise<number> {
    const bare = await this.jobs.find({
      recipients_expire_at: null,
      batches_expire_at: null,
      expires_at: null,
      retain_until: { $ne: null },
    });
    for (const job of bare) {
      await this.jobs.updateOne(
        { _id: job._id, expires_at: null },
        { $set: { expires_at: job.retain_until } },
      );
    }
    return bare.length;
  }

  /** Deletes jobs past their retention; resolves to how many. */
  async purgeJobs(now: Date): Promise<number> {
    let deleted = 0;
    for (const job of await this.due("expires_at", now))
      deleted += await this.jobs.deleteOne({ _id: job._id });
    return deleted;
  }

  /**
   * Ended jobs recorded before retention existed get their dates now (from when they ended), so the
   * rules above reach them too.
   */
  async dateOldJobs(retention: Retention): Promise<number> {
    const old = await this.jobs.find({ status: { $in: ENDED }, retain_until: { $exists: false } });
    for (const job of old) {
      await this.jobs.updateOne(
        { _id: job._id },
        { $set: { ...expiries(new Date(job.finished_at ?? job.created_at), retention), expires_at: null } },
      );
    }
    return old.length;
  }

  /**
   * Recipient sets no job took, opened more than `olderThanMs` ago (a request given up half-way, the
   * copy a retried request stored): a job takes its set within its request's time, or never. Only a
   * set's small header is read; a taken set's header is deleted when its job is recorded.
   */
  async dropAbandonedSets(now: Date, olderThanMs: number): Promise<number> {
    const cutoff = new Date(now.getTime() - olderThanMs);
    const open = await this.recipients.find({ index: -1, staged_at: { $lt: cutoff, $ne: null } });
    let deleted = 0;
    for (const header of open) {
      const job = await this.find(jobOfSet(header.set_id));
      // Taken (a crash came between recording the job and deleting the header): only the header goes.
      if (job?.recipient_set === header.set_id)
        deleted += await this.recipients.deleteOne({ _id: header._id });
      else deleted += await this.dropSet(header.set_id);
    }
    return deleted;
  }
}

/** When an ended job's recipients, batches and record go. */
function expiries(ended: Date, r: Retention) {
  const at = (ms: number) => new Date(ended.getTime() + ms);
  return {
    recipients_expire_at: at(r.recipientsMs),
    batches_expire_at: at(r.batchesMs),
    retain_until: at(r.jobMs),
  };
}
