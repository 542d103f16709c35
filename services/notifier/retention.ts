/**
 * What the notifier keeps, and for how long (docs/decisions/0032-job-queue.md): an ended job's
 * recipients and token batches for a day, then the job itself for 30 days (also how long its
 * Idempotency-Key is honoured); a recipient set no job took goes an hour after it was opened. Swept hourly by each notifier
 * process (shared/runtime/sweeper.ts); on MongoDB a TTL index deletes the jobs as well.
 */
import type { SweepTask } from "../../shared/runtime/sweeper";
import type { JobsRepository, Retention } from "./jobs.repository";

export const NOTIFIER_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/**
 * A recipient set not taken by a job this long after it was opened never will be: its request (at most
 * HTTP_REQUEST_TIMEOUT_MS, 30 s by default) is long over.
 */
export const ABANDONED_SET_MS = 60 * 60 * 1000;

const HOUR_MS = 60 * 60 * 1000;

/**
 * An ended job stays readable (GET /notifications/{job_id}) and its Idempotency-Key honoured for 30 days:
 * long past any client's retries, and a job is a few hundred bytes. Its recipient pages and token
 * batches, which grow with the list (up to 100,000 ids and their tokens), are needed only while it runs
 * and to answer a retry of a page; a day covers both. A job is deleted only after what hangs off it, so
 * neither may outlast it.
 */
export const RETENTION: Retention = {
  jobMs: 720 * HOUR_MS,
  batchesMs: 24 * HOUR_MS,
  recipientsMs: 24 * HOUR_MS,
};

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
