/**
 * The composition root: the one place that assembles a process. It builds the broker from the options
 * (./broker-options), binds the configuration to it (services read it through configOf), closes the
 * store when it stops, keeps nats.js's given-up dials given up when the transporter is NATS, and creates
 * the services the configuration names. bin/, the benches and the tests start processes through it;
 * services/ import shared/, and shared/ imports neither services/ nor this folder
 * (test/unit/test/support/import-graph.test.ts).
 */
import type { ServiceBroker, ServiceSchema } from "moleculer";
import { brokerOptions } from "./broker-options";
import { bindConfig, isNats, type Config } from "../shared/config";
import { closeStoreOf } from "../shared/storage";
import { GracefulBroker } from "../shared/runtime/shutdown";
import { closeAbandonedNatsDials } from "../shared/runtime/nats-abandoned-dials";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each schema has its own `this` type
type AnyServiceSchema = ServiceSchema<any, any>;

/**
 * Each service's schema, its module loaded when first asked for: a process loads only the services it
 * runs, and so not the packages only the others use (moleculer-web and busboy in the gateway,
 * firebase-admin in the notifier; docs/decisions/0060-node-24-production.md).
 */
/* eslint-disable @typescript-eslint/no-require-imports -- a static import would load every service */
const serviceModules: Record<string, () => AnyServiceSchema> = {
  gateway: () =>
    (require("../services/gateway.service") as typeof import("../services/gateway.service")).default,
  auth: () => (require("../services/auth.service") as typeof import("../services/auth.service")).default,
  users: () => (require("../services/users.service") as typeof import("../services/users.service")).default,
  rounds: () =>
    (require("../services/rounds.service") as typeof import("../services/rounds.service")).default,
  stores: () =>
    (require("../services/stores.service") as typeof import("../services/stores.service")).default,
  settings: () =>
    (require("../services/settings.service") as typeof import("../services/settings.service")).default,
  notifier: () =>
    (require("../services/notifier.service") as typeof import("../services/notifier.service")).default,
};
/* eslint-enable @typescript-eslint/no-require-imports */

/** The services a process can run, by the names SERVICES uses. */
export const serviceNames: readonly string[] = Object.keys(serviceModules);

/** The schema of service `name` (one of `serviceNames`), loading its module on first use. */
export const serviceSchema = (name: string): AnyServiceSchema => serviceModules[name]();

export interface BrokerExtras {
  /** No log at all: the operations CLI, whose output is the command's answer and one line per error. */
  quiet?: boolean;
}

export function createBroker(
  config: Config,
  services: string[] = config.services,
  extras: BrokerExtras = {},
): ServiceBroker {
  const unknown = services.filter((s) => !serviceNames.includes(s));
  if (unknown.length > 0) {
    throw new Error(
      `Unknown service(s) in SERVICES: ${unknown.join(", ")}; known: ${serviceNames.join(", ")}`,
    );
  }
  const options = brokerOptions(config);
  const broker = new GracefulBroker({
    ...options,
    ...(extras.quiet ? { logger: false } : {}),
    stopped: async (b) => {
      await closeStoreOf(b);
    },
  });
  // Process-wide: the first broker of a process decides.
  if (isNats(config)) {
    closeAbandonedNatsDials(config.internalsHooksOff, (m) => broker.getLogger("internals").warn(m));
  }
  bindConfig(broker, config);
  for (const name of services) broker.createService(serviceSchema(name) as ServiceSchema);
  return broker;
}
