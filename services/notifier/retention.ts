/**
 * What the notifier keeps, and for how long (docs/decisions/0032-job-queue.md): an ended job's
 * recipients (NOTIFIER_RECIPIENT_RETENTION_HOURS) and token batches (NOTIFIER_BATCH_RETENTION_HOURS),
 * then the job itself (NOTIFIER_JOB_RETENTION_HOURS, which is also how long its Idempotency-Key is
 * honoured); a recipient set no job took goes an hour after it was opened. Swept hourly by each notifier
 * process (shared/runtime/sweeper.ts); on MongoDB a TTL index deletes the jobs as well.
 */
import type { Config } from "../../shared/config";
import type { SweepTask } from "../../shared/runtime/sweeper";
import type { JobsRepository, Retention } from "./jobs.repository";

export const NOTIFIER_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/**
 * A recipient set not taken by a job this long after it was opened never will be: its request (at most
 * HTTP_REQUEST_TIMEOUT_MS, 30 s by default) is long over.
 */
export const ABANDONED_SET_MS = 60 * 60 * 1000;

const HOUR_MS = 60 * 60 * 1000;

export const retentionOf = (
  config: Pick<
    Config,
    "notifierJobRetentionHours" | "notifierBatchRetentionHours" | "notifierRecipientRetentionHours"
  >,
): Retention => ({
  jobMs: config.notifierJobRetentionHours * HOUR_MS,
  batchesMs: config.notifierBatchRetentionHours * HOUR_MS,
  recipientsMs: config.notifierRecipientRetentionHours * HOUR_MS,
});

/** The notifier's sweep, in order: children of a job before the job. */
export function notifierSweepTasks(jobs: JobsRepository, retention: Retention): SweepTask[] {
  return [
    // Not removals: ended jobs recorded before retention existed get their dates.
    {
      name: "notification jobs ended before retention",
      run: async () => (await jobs.dateOldJobs(retention), 0),
    },
    { name: "notification recipients", run: (now) => jobs.purgeRecipients(now) },
    { name: "notification batches", run: (now) => jobs.purgeBatches(now) },
    { name: "abandoned recipient sets", run: (now) => jobs.dropAbandonedSets(now, ABANDONED_SET_MS) },
    // Not removals: the jobs whose recipients and batches are gone get their deletion date.
    { name: "notification jobs dated", run: async () => (await jobs.settleExpiries(), 0) },
    { name: "notification jobs", run: (now) => jobs.purgeJobs(now) },
  ];
}
