/**
 * The names of the metrics the processes export at /metrics (METRICS_PORT) that the dashboard and the
 * alerting rules in deploy/observability/ read: one place, so a metric is renamed here or nowhere.
 * Moleculer's registry names them with dots; its Prometheus reporter writes them with underscores
 * (`prometheusName`). A unit test checks that every name the dashboard and the rules use is one of
 * `DASHBOARD_METRICS`, and an e2e test that every one of them is at a live /metrics.
 */

/** What Moleculer's Prometheus reporter makes of a registry name: dots and dashes become underscores. */
export const prometheusName = (name: string): string => name.replace(/[.-]/g, "_");

/** Ours (shared/runtime/metrics.ts registers them). */
export const MetricNames = {
  /** Counter of HTTP requests the gateway answered, labels `route` (the template) and `status`. */
  httpRequests: "gateway.http.requests.total",
  /** Histogram of their duration in seconds, from the request to its answer, label `route`. */
  httpDuration: "gateway.http.request.duration.seconds",
  /** Gauge: documents of the producing service holding facts not yet published, label `service`. */
  outboxBacklog: "outbox.backlog",
  /** Gauge: seconds since the oldest fact still waiting was recorded (0: none waits), label `service`. */
  outboxOldest: "outbox.oldest.seconds",
  /** Gauge: seconds since the oldest unfinished notification job was accepted, label `status`. */
  notifierJobLag: "notifier.job.lag.seconds",
  /** Gauge: notification jobs not finished, label `status` (queued, sending). */
  notifierJobsUnfinished: "notifier.jobs.unfinished",
  /**
   * Counter of store writes that failed for a reason other than a missing primary (a full or read-only
   * disk, EIO, a MongoDB write error), labels `store` and `code`. Registered (at 0) in every process
   * that opens a store; the code that catches such a write counts it with `storeWriteErrors(broker)`.
   */
  storeWriteErrors: "store.write.errors.total",
  /** Gauge: the memory this process may use: its cgroup (container) limit, else the machine's memory. */
  processMemoryLimit: "process.memory.limit",
} as const;

/** Moleculer's own (its process metrics, collected every 5 s). */
export const MoleculerMetricNames = {
  heapUsed: "process.memory.heap.size.used",
  /** V8's heap limit: `--max-old-space-size` plus the young generation. */
  heapLimit: "process.memory.heap.stat.heap.size.limit",
  rss: "process.memory.rss",
  actionErrors: "moleculer.request.error.total",
} as const;

/**
 * @moleculer/channels' own (constants of the package): with NATS, a fact or job handed back for
 * redelivery after its handler failed, and one moved to the dead-letter stream after its last attempt;
 * labels `channel` and `group`. Shown at 0 from the start (shared/runtime/metrics.ts).
 */
export const ChannelMetricNames = {
  retries: "moleculer.channels.messages.retries.total",
  deadLettered: "moleculer.channels.messages.deadLettering.total",
} as const;

/**
 * Every Prometheus name the dashboard and the rules may use. A histogram is read through its
 * `_bucket` series (Moleculer's reporter writes `_sum` and `_count` only for histograms with quantiles).
 */
export const DASHBOARD_METRICS: readonly string[] = [
  ...Object.values(MetricNames)
    .filter((n) => n !== MetricNames.httpDuration)
    .map(prometheusName),
  `${prometheusName(MetricNames.httpDuration)}_bucket`,
  ...Object.values(MoleculerMetricNames).map(prometheusName),
  ...Object.values(ChannelMetricNames).map(prometheusName),
];

/** Names only a process with NATS (JetStream channels) exports: the embedded system has no channels. */
export const NATS_ONLY_METRICS: readonly string[] = Object.values(ChannelMetricNames).map(prometheusName);
