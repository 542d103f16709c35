/**
 * What an operator looks at (deploy/observability/): the dashboard's and the alerting rules' PromQL
 * names only metrics of the catalog (shared/runtime/metric-names.ts), which test/e2e/observability
 * finds at a live /metrics; and the project's own metrics behave as the dashboard reads them.
 */
import { EventEmitter } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import { ServiceBroker, type CounterMetric, type GaugeMetric, type ServiceSchema } from "moleculer";
import {
  ChannelMetricNames,
  DASHBOARD_METRICS,
  MetricNames,
  prometheusName,
} from "../../../../shared/runtime/metric-names";
import { memoryLimitBytes, MetricsMiddleware, storeWriteErrors } from "../../../../shared/runtime/metrics";
import { HttpMetrics, routeLabel, statusLabel } from "../../../../services/gateway/http-metrics";
import { watchJobLag } from "../../../../services/notifier/job-metrics";
import type { RouteSpec } from "../../../../services/gateway/routes";
import { dashboardExpressions, metricNames, ruleExpressions, type Expression } from "../../../support/promql";
import fs from "node:fs";
import path from "node:path";
import { parse } from "yaml";

const dir = path.resolve(__dirname, "../../../../deploy/observability");

describe("metric names in PromQL", () => {
  it("when an expression aggregates, filters and divides, then only the metric names are found, not functions, labels or keywords", () => {
    expect(
      metricNames(
        'sum by (route, le) (rate(http_bucket{status=~"5..", route!="a{b}"}[5m] offset 1h)) / on(job) group_left(instance) up_total > bool 0.5',
      ).sort(),
    ).toEqual(["http_bucket", "up_total"]);
    expect(
      metricNames("histogram_quantile(0.99, sum(rate(x_bucket[$__rate_interval])) without (pod))"),
    ).toEqual(["x_bucket"]);
    expect(metricNames("max by (service) (outbox_oldest_seconds) > 60")).toEqual(["outbox_oldest_seconds"]);
    expect(metricNames("a unless b or c and d")).toEqual(["a", "b", "c", "d"]);
  });

  it("when strings, comments, subqueries, Grafana variables and numbers appear, then none of them is taken for a name", () => {
    expect(
      metricNames(
        'label_replace(w, "dst", "$1 not_a_metric", "src", "(.*)") # comment_not_a_metric\n + max_over_time(z[10m:1m]) * 1e3 - 0x1f + ${factor} + $scale',
      ).sort(),
    ).toEqual(["w", "z"]);
    expect(metricNames("time() - vector(1)")).toEqual([]);
    expect(metricNames("-process_memory_rss")).toEqual(["process_memory_rss"]);
    expect(metricNames('count_values without (a) ("v", m)')).toEqual(["m"]);
  });

  it("when brackets are unbalanced, then the expression is refused rather than half read", () => {
    expect(() => metricNames("rate(x[5m)")).toThrow(/unbalanced/);
  });
});

describe("the dashboard and the alerting rules", () => {
  const dashboard = dashboardExpressions();
  const rules = ruleExpressions();
  const names = (exprs: Expression[]) => new Set(exprs.flatMap((e) => metricNames(e.expr)));

  it("when every expression is read, then each names at least one metric, and every name is one the processes export (the catalog)", () => {
    const known = new Set(DASHBOARD_METRICS);
    const unknown = [...dashboard, ...rules].flatMap((e) =>
      metricNames(e.expr)
        .filter((n) => !known.has(n))
        .map((n) => `${e.where}: ${n}`),
    );
    expect(unknown).toEqual([]);
    const empty = [...dashboard, ...rules]
      .filter((e) => metricNames(e.expr).length === 0)
      .map((e) => e.where);
    expect(empty).toEqual([]);
  });

  it("when the dashboard is read, then it shows every metric of the catalog", () => {
    expect(DASHBOARD_METRICS.filter((n) => !names(dashboard).has(n))).toEqual([]);
  });

  it("when the rules are read, then they alert on errors and p99 by route, the outbox, redeliveries, dead letters, job lag, store write errors and memory against its caps", () => {
    const used = names(rules);
    for (const name of [
      MetricNames.httpRequests,
      `${MetricNames.httpDuration}_bucket`,
      MetricNames.outboxOldest,
      ChannelMetricNames.retries,
      ChannelMetricNames.deadLettered,
      MetricNames.notifierJobLag,
      MetricNames.storeWriteErrors,
      "process.memory.heap.size.used",
      "process.memory.heap.stat.heap.size.limit",
      "process.memory.rss",
      MetricNames.processMemoryLimit,
    ]) {
      expect({ name: prometheusName(name), used: used.has(prometheusName(name)) }).toEqual({
        name: prometheusName(name),
        used: true,
      });
    }
  });

  it("when the rules file is read, then every rule is an alert with a severity, a summary and, if any, a valid `for`", () => {
    const file = parse(fs.readFileSync(path.join(dir, "alerts.yml"), "utf8")) as {
      groups: { name: string; rules: Record<string, any>[] }[];
    };
    const alerts = file.groups.flatMap((g) => g.rules);
    expect(new Set(alerts.map((r) => r.alert)).size).toBe(alerts.length);
    for (const r of alerts) {
      expect({
        alert: r.alert,
        severity: r.labels?.severity,
        summary: typeof r.annotations?.summary,
      }).toEqual({
        alert: r.alert,
        severity: expect.stringMatching(/^(warning|critical)$/),
        summary: "string",
      });
      if (r.for !== undefined) expect(r.for).toMatch(/^\d+[smh]$/);
    }
  });

  it("when the dashboard is read, then its panels have unique ids, fit the grid, and query the data source its variable picks", () => {
    const json = JSON.parse(fs.readFileSync(path.join(dir, "dashboard.json"), "utf8"));
    const panels = json.panels as any[];
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    for (const p of panels) {
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
      for (const t of p.targets ?? [])
        expect(t.datasource).toEqual({ type: "prometheus", uid: "${datasource}" });
    }
    expect(json.uid).toBe("rounds-platform");
  });
});

/** A broker with metrics and no reporter: the registry alone. */
const metricsBroker = (services: ServiceSchema[] = []) => {
  const broker = new ServiceBroker({
    logger: false,
    metrics: { enabled: true, collectProcessMetrics: false },
    middlewares: [MetricsMiddleware()],
  });
  for (const s of services) broker.createService(s);
  return broker;
};
const series = (broker: ServiceBroker, name: string) =>
  (broker.metrics.getMetric(name)?.snapshot() ?? []) as { labels: Record<string, string>; value: number }[];

describe("the project's metrics", () => {
  it("when a process opens its store, then the write error counter is there at 0, once however often it is asked for", () => {
    const broker = metricsBroker();
    expect(storeWriteErrors(broker)).not.toBeNull();
    storeWriteErrors(broker);
    expect(series(broker, MetricNames.storeWriteErrors)).toEqual([
      expect.objectContaining({ labels: {}, value: 0 }),
    ]);
    storeWriteErrors(broker)!.increment({ store: "rounds", code: "ENOSPC" });
    expect(series(broker, MetricNames.storeWriteErrors)).toContainEqual(
      expect.objectContaining({ labels: { store: "rounds", code: "ENOSPC" }, value: 1 }),
    );
    expect(storeWriteErrors(new ServiceBroker({ logger: false }))).toBeNull();
  });

  it("when the broker is created, then its memory limit is shown; when its services start, the channel counters are at 0 for each channel it consumes", async () => {
    // The counters as @moleculer/channels registers them (with NATS only).
    const broker = metricsBroker([
      {
        name: "rounds",
        channels: { "store.event.created": { group: "rounds", handler: async () => undefined } },
      } as ServiceSchema,
      {
        name: "notifier",
        channels: { "notifier.jobs": { handler: async () => undefined } },
      } as ServiceSchema,
    ]);
    for (const name of Object.values(ChannelMetricNames)) {
      broker.metrics.register({ type: "counter", name, labelNames: ["channel", "group"] });
    }
    await broker.start();
    try {
      expect(series(broker, MetricNames.processMemoryLimit)[0].value).toBe(memoryLimitBytes());
      expect(memoryLimitBytes()).toBeGreaterThan(0);
      for (const name of Object.values(ChannelMetricNames)) {
        expect(series(broker, name).map((s) => [s.labels, s.value])).toEqual([
          [{ channel: "store.event.created", group: "rounds" }, 0],
          [{ channel: "notifier.jobs", group: "notifier" }, 0],
        ]);
      }
    } finally {
      await broker.stop();
    }
  });

  it("when requests are answered, then each is counted by route template and status, its duration observed, and one that never got an answer counts as aborted", () => {
    const broker = metricsBroker();
    const metrics = HttpMetrics.of(broker)!;
    const spec = { method: "GET", path: "/rounds/:round_id" } as RouteSpec;
    const answer = (status: number | null, routed: boolean) => {
      const req = new EventEmitter() as unknown as IncomingMessage;
      const res = Object.assign(new EventEmitter(), {
        headersSent: status !== null,
        statusCode: status ?? 200,
      }) as unknown as ServerResponse;
      metrics.track(req, res, () => (routed ? spec : undefined));
      res.emit("close");
    };
    answer(200, true);
    answer(200, true);
    answer(404, true);
    answer(null, true);
    answer(404, false);
    const counts = Object.fromEntries(
      series(broker, MetricNames.httpRequests).map((s) => [`${s.labels.route} ${s.labels.status}`, s.value]),
    );
    expect(counts).toEqual({
      "GET /rounds/:round_id 200": 2,
      "GET /rounds/:round_id 404": 1,
      "GET /rounds/:round_id aborted": 1,
      "(no route) 404": 1,
    });
    const durations = series(broker, MetricNames.httpDuration) as unknown as {
      labels: { route: string };
      count: number;
      buckets: Record<string, number>;
    }[];
    expect(durations.find((d) => d.labels.route === "GET /rounds/:round_id")).toMatchObject({ count: 4 });
    expect(HttpMetrics.of(new ServiceBroker({ logger: false }))).toBeNull();
  });

  it("when a route label is made, then it comes from the route table or the alias template, never from the URL", () => {
    const req = { url: "/rounds/123?x=1", method: "GET" } as IncomingMessage & { $alias?: object };
    expect(routeLabel(req, { method: "POST", path: "/rounds/:round_id/join" } as RouteSpec)).toBe(
      "POST /rounds/:round_id/join",
    );
    expect(routeLabel({ ...req, $alias: { method: "GET", fullPath: "/health" } } as never, undefined)).toBe(
      "GET /health",
    );
    expect(routeLabel(req, undefined)).toBe("(no route)");
    expect(statusLabel({ headersSent: true, statusCode: 503 } as ServerResponse)).toBe("503");
  });

  it("when jobs wait or are being sent, then the notifier shows how many and how long ago the oldest was accepted, per status", async () => {
    jest.useFakeTimers({ now: new Date("2030-01-01T00:10:00Z") });
    const broker = metricsBroker();
    try {
      const lagOf = jest.fn(async (status: "queued" | "sending") =>
        status === "queued"
          ? { count: 3, oldest: new Date("2030-01-01T00:05:00Z") }
          : { count: 0, oldest: null },
      );
      const stop = watchJobLag(broker, { lagOf }, 5000)!;
      await jest.advanceTimersByTimeAsync(0);
      const lag = broker.metrics.getMetric(MetricNames.notifierJobLag) as GaugeMetric;
      const count = broker.metrics.getMetric(MetricNames.notifierJobsUnfinished) as CounterMetric;
      expect(lag.get({ status: "queued" })?.value).toBe(300);
      expect(lag.get({ status: "sending" })?.value).toBe(0);
      expect(count.get({ status: "queued" })?.value).toBe(3);
      await jest.advanceTimersByTimeAsync(5000);
      expect(lag.get({ status: "queued" })?.value).toBe(305);
      stop();
      await jest.advanceTimersByTimeAsync(20_000);
      expect(lagOf).toHaveBeenCalledTimes(4);
      expect(watchJobLag(new ServiceBroker({ logger: false }), { lagOf })).toBeNull();
    } finally {
      jest.useRealTimers();
    }
  });
});
