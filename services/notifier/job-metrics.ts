/**
 * The notifier's job lag at /metrics (metrics on only): for queued jobs (accepted, no delivery started)
 * and jobs being sent, how many there are and how long ago the oldest was accepted
 * (`notifier_jobs_unfinished`, `notifier_job_lag_seconds`, label `status`). Read from the jobs'
 * store every few seconds, so every notifier process shows the same figures when they share MongoDB.
 */
import type { ServiceBroker } from "moleculer";
import { MetricNames } from "../../shared/runtime/metric-names";
import { labelledGauge } from "../../shared/runtime/metrics";
import type { JobsRepository } from "./jobs.repository";

const STATUSES = ["queued", "sending"] as const;

/** As often as Moleculer collects its own process metrics. */
const EVERY_MS = 5000;

/** Starts the readings; returns what stops them, or null without metrics. */
export function watchJobLag(
  broker: ServiceBroker,
  jobs: Pick<JobsRepository, "lagOf">,
  everyMs = EVERY_MS,
): (() => void) | null {
  const lag = labelledGauge(
    broker,
    MetricNames.notifierJobLag,
    "status",
    "Seconds since the oldest notification job in this status was accepted (0: none)",
  );
  const unfinished = labelledGauge(
    broker,
    MetricNames.notifierJobsUnfinished,
    "status",
    "Notification jobs in this status",
  );
  if (!lag || !unfinished) return null;
  const read = async () => {
    for (const status of STATUSES) {
      const { count, oldest } = await jobs.lagOf(status);
      unfinished.set(count, { status });
      lag.set(oldest ? Math.max(0, (Date.now() - oldest.getTime()) / 1000) : 0, { status });
    }
  };
  for (const status of STATUSES) {
    unfinished.set(0, { status });
    lag.set(0, { status });
  }
  // A store that cannot be read keeps the last figures; its readiness check reports it.
  void read().catch(() => undefined);
  const timer = setInterval(() => void read().catch(() => undefined), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
