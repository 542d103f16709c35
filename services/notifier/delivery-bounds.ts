/**
 * How many times a multicast job is attempted before it is failed (and dead-lettered with NATS). Read by
 * the notifier and by the broker options (the channel's own bound is one more, so the attempt that marks
 * the job failed is delivered): a module of its own, so app/broker-options.ts loads no notifier code.
 *
 * Five: an attempt resumes where the last one stopped (finished batches are recorded), so attempts are
 * spent only by whole failures, a crashed or stopped notifier, or the store refusing writes; spread out
 * 1, 2, 4 and 8 s apart they outlast a passing outage, and a job that fails five times fails for a reason
 * a sixth would meet too.
 */
export const MAX_DELIVERIES = 5;

/**
 * Seconds without a sign of life before JetStream hands a job to another notifier. The notifier signals
 * "in progress" every third of it while a job runs, so only a dead or stuck process meets it: 15 s lets
 * two signals be late under load (a GC pause, a slow store) without a second delivery, and a crashed
 * notifier's job resumes within a quarter of a minute of it.
 */
export const ACK_WAIT_SECONDS = 15;
