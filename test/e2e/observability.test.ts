/**
 * Every metric the dashboard and the alerting rules of deploy/observability/ read is at a live /metrics:
 * a renamed or removed metric fails here. Embedded, the one process's /metrics; in the cluster project
 * (SYSTEM_TOPOLOGY=cluster, NATS with JetStream), every process's, each on its own METRICS_PORT, where
 * @moleculer/channels' counters exist too (the embedded system has no channels).
 */
import { NATS_ONLY_METRICS } from "../../shared/runtime/metric-names";
import { freePort } from "../support/brokers";
import { ALL_SERVICES } from "../support/cluster";
import { dashboardExpressions, exposedNames, metricNames, ruleExpressions } from "../support/promql";
import { api, startSystem, topology, type System } from "../support/system";

describe("metrics the dashboard and the alerts read", () => {
  let sys: System;
  const ports: Record<string, number> = {};

  beforeAll(async () => {
    const processes = topology === "cluster" ? ["gateway", ...ALL_SERVICES] : ["embedded"];
    for (const p of processes) ports[p] = await freePort();
    sys =
      topology === "cluster"
        ? await startSystem({
            processEnv: Object.fromEntries(processes.map((p) => [p, { METRICS_PORT: String(ports[p]) }])),
          })
        : await startSystem({ env: { METRICS_PORT: String(ports.embedded) } });
  }, 120_000);
  afterAll(() => sys?.stop());

  it("when the system has answered requests, then every metric name in the dashboard's and the rules' expressions is exported by its processes", async () => {
    // Some traffic: per-route series exist once a route has answered.
    const token = sys.manifest.users.alice.access_token;
    expect((await api(sys, "GET", `/rounds/${sys.manifest.rounds.open}`, { token })).status).toBe(200);
    expect((await api(sys, "GET", "/rounds/00000000-0000-4000-8000-000000000000", { token })).status).toBe(
      404,
    );

    const exported = new Set<string>();
    for (const [name, port] of Object.entries(ports)) {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect({ process: name, status: res.status }).toEqual({ process: name, status: 200 });
      for (const n of exposedNames(await res.text())) exported.add(n);
    }
    const missing = [...dashboardExpressions(), ...ruleExpressions()]
      .flatMap((e) => metricNames(e.expr).map((n) => ({ where: e.where, name: n })))
      .filter(({ name }) => !exported.has(name))
      // Embedded there is no JetStream: its channel counters exist only in the cluster.
      .filter(({ name }) => topology === "cluster" || !NATS_ONLY_METRICS.includes(name))
      .map(({ where, name }) => `${where}: ${name}`);
    expect([...new Set(missing)]).toEqual([]);
  }, 60_000);
});
