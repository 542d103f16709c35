/**
 * The project's own metrics beside Moleculer's (names: ./metric-names.ts), registered on the broker's
 * registry when metrics are on (METRICS_PORT) and shown from the start: Moleculer's Prometheus reporter
 * leaves out a metric without a value, and a counter that appears only at its first increment hides
 * that increment from `increase()`. Each function does nothing when metrics are off.
 */
import os from "node:os";
import type {
  BaseMetric,
  CounterMetric,
  GaugeMetric,
  HistogramMetric,
  Middleware,
  Service,
  ServiceBroker,
} from "moleculer";
import { ChannelMetricNames, MetricNames } from "./metric-names";

type Labels = Record<string, string>;

/** The metric `name`, registered by the first caller with `opts`. */
function metricOf<M extends BaseMetric>(
  broker: ServiceBroker,
  name: string,
  opts: {
    type: "counter" | "gauge" | "histogram";
    description: string;
    labelNames?: string[];
    unit?: string;
  } & Record<string, unknown>,
): M | null {
  if (!broker.isMetricsEnabled()) return null;
  // Rates are Prometheus's to compute: no per-series rate timers in the process.
  return ((broker.metrics.getMetric(name) as M | undefined) ??
    (broker.metrics.register({ name, rate: false, ...opts }) as M | null)) as M | null;
}

/**
 * The store write error counter (labels `store`, `code`): registered, with a series at 0, the first
 * time a process asks for it (every process opens its store through shared/runtime's serviceStore).
 */
export function storeWriteErrors(broker: ServiceBroker): CounterMetric | null {
  const known = broker.isMetricsEnabled() && !!broker.metrics.getMetric(MetricNames.storeWriteErrors);
  const counter = metricOf<CounterMetric>(broker, MetricNames.storeWriteErrors, {
    type: "counter",
    description:
      "Store writes that failed other than for a missing primary (full or read-only disk, EIO, write errors)",
    labelNames: ["store", "code"],
  });
  if (counter && !known) counter.increment({}, 0);
  return counter;
}

/** What the process may use: its cgroup limit (Node reads it), or the machine's memory without one. */
export function memoryLimitBytes(): number {
  const total = os.totalmem();
  const constrained = process.constrainedMemory?.() ?? 0;
  // Unlimited cgroups report 2^64 - 1 (or 0 where unknown).
  return constrained > 0 && constrained < total ? constrained : total;
}

/** The labels @moleculer/channels counts a channel's messages under: its name and consumer group. */
export function channelLabels(services: Service[]): Labels[] {
  const out: Labels[] = [];
  for (const svc of services) {
    const channels = (svc.schema as { channels?: Record<string, unknown> }).channels ?? {};
    for (const [key, def] of Object.entries(channels)) {
      const d = (typeof def === "object" && def !== null ? def : {}) as { name?: string; group?: string };
      out.push({ channel: d.name ?? key, group: d.group ?? svc.fullName });
    }
  }
  return out;
}

/**
 * Registers the process-wide metrics: the memory limit when the broker is created; once the services
 * have started, the channel counters of @moleculer/channels (redeliveries asked for, dead letters) at 0
 * for every channel this process consumes (they exist only with NATS).
 */
export function MetricsMiddleware(): Middleware {
  return {
    name: "ProjectMetrics",
    created(broker: ServiceBroker) {
      metricOf<GaugeMetric>(broker, MetricNames.processMemoryLimit, {
        type: "gauge",
        description: "Memory this process may use: its cgroup (container) limit, else the machine's memory",
        unit: "byte",
      })?.set(memoryLimitBytes());
    },
    started(broker: ServiceBroker) {
      if (!broker.isMetricsEnabled()) return;
      for (const name of Object.values(ChannelMetricNames)) {
        const counter = broker.metrics.getMetric(name) as CounterMetric | undefined;
        if (!counter) continue;
        for (const labels of channelLabels(broker.services)) counter.increment(labels, 0);
      }
    },
    // Moleculer's typings know no `name` property of a middleware, though it reads one.
  } as unknown as Middleware;
}

/** A gauge with one label, registered by its first caller. */
export function labelledGauge(
  broker: ServiceBroker,
  name: string,
  label: string,
  description: string,
): GaugeMetric | null {
  return metricOf<GaugeMetric>(broker, name, { type: "gauge", description, labelNames: [label] });
}

/** The gateway's HTTP request counter and duration histogram (services/gateway/http-metrics.ts). */
export function httpMetrics(
  broker: ServiceBroker,
): { requests: CounterMetric; duration: HistogramMetric } | null {
  const requests = metricOf<CounterMetric>(broker, MetricNames.httpRequests, {
    type: "counter",
    description: "HTTP requests the gateway answered, by route template and status",
    labelNames: ["route", "status"],
  });
  const duration = metricOf<HistogramMetric>(broker, MetricNames.httpDuration, {
    type: "histogram",
    description: "Seconds from an HTTP request's arrival to its answer, by route template",
    labelNames: ["route"],
    // Reads answer in milliseconds; uploads may take up to UPLOAD_TIMEOUT_MS (120 s).
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120],
    quantiles: false,
  });
  return requests && duration ? { requests, duration } : null;
}
