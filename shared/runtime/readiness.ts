/**
 * Readiness, service by service: every domain service answers `<name>.ready` with the state of what it
 * depends on (its store), so the gateway's /health/ready can tell an orchestrator which part is missing.
 */
import type { Service, ServiceSchema } from "moleculer";
import { serviceStore } from "./index";

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
