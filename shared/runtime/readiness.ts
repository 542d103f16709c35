/**
 * Readiness, service by service: every domain service answers `<name>.ready` with the state of what it
 * depends on (its store), so the gateway's /health/ready can tell an orchestrator which part is missing.
 */
import type { Service, ServiceBroker, ServiceSchema } from "moleculer";
import { serviceStore } from "./index";
import { isLeaving } from "./shutdown";

export interface ServiceReadiness {
  service: string;
  node: string;
  store: "ok" | "unreachable";
}

export const ReadinessMixin: Partial<ServiceSchema> = {
  actions: {
    ready: {
      visibility: "public",
      async handler(this: Service): Promise<ServiceReadiness> {
        const store = await serviceStore(this)
          .then((s) => s.ping())
          .then(
            () => "ok" as const,
            () => "unreachable" as const,
          );
        return { service: this.name, node: this.broker.nodeID, store };
      },
    },
  },
};

export interface ReadinessReport {
  status: "ready" | "not ready";
  checks: Record<string, string>;
}

/**
 * One readiness verdict for the gateway's /health/ready and the HEALTH_PORT probes: transporter, cacher
 * (optionally) and each named service's `ready` action. `localOnly` asks this process's instance and
 * reports a service it does not run as "not started". A process whose stop has been asked for is not
 * ready whatever else holds: a load balancer stops sending it connections (shared/runtime/shutdown).
 */
export async function checkReadiness(
  broker: ServiceBroker,
  services: string[],
  opts: { localOnly: boolean; cacher: boolean },
): Promise<ReadinessReport> {
  if (isLeaving(broker)) return { status: "not ready", checks: { process: "stopping" } };
  // `connected` is declared in Moleculer's typings (not its guide), so a rename fails the type check.
  const transit = broker.transit;
  const checks: Record<string, string> = {
    transporter: !transit ? "none (one process)" : transit.connected === true ? "ok" : "disconnected",
  };
  if (opts.cacher) {
    checks.cacher = !broker.cacher
      ? "none"
      : await broker.cacher.set("health:ready", Date.now(), 5).then(
          () => "ok",
          () => "unreachable",
        );
  }
  await Promise.all(
    services.map(async (name) => {
      if (opts.localOnly && !broker.getLocalService(name)) {
        checks[name] = "not started";
        return;
      }
      const callOpts = { timeout: 2000, retries: 0, ...(opts.localOnly ? { nodeID: broker.nodeID } : {}) };
      checks[name] = await broker
        .call<ServiceReadiness, Record<string, never>>(`${name}.ready`, {}, callOpts)
        .then(
          (r) => (r.store === "ok" ? "ok" : "store unreachable"),
          () => "unavailable",
        );
    }),
  );
  const ready = Object.values(checks).every((v) => v === "ok" || v.startsWith("none"));
  return { status: ready ? "ready" : "not ready", checks };
}
