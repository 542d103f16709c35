/**
 * The composition root: the one place that assembles a process. It builds the broker from the options
 * (./broker-options), binds the configuration to it (services read it through configOf), closes the
 * store when it stops, batches NATS writes when the transporter is NATS, and creates the services the
 * configuration names. bin/, the benches and the tests start processes through it; services/ import
 * shared/, and shared/ imports neither services/ nor this folder (test/unit/import-graph.test.ts).
 */
import type { ServiceBroker, ServiceSchema } from "moleculer";
import { brokerOptions } from "./broker-options";
import { bindConfig, type Config } from "../shared/config";
import { closeStoreOf } from "../shared/storage";
import { GracefulBroker } from "../shared/runtime/shutdown";
import AuthService from "../services/auth.service";
import GatewayService from "../services/gateway.service";
import NotifierService from "../services/notifier.service";
import RoundsService from "../services/rounds.service";
import SettingsService from "../services/settings.service";
import StoresService from "../services/stores.service";
import UsersService from "../services/users.service";
import { batchNatsWrites } from "../shared/runtime/nats-batching";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each schema has its own `this` type
type AnyServiceSchema = ServiceSchema<any, any>;

export const serviceSchemas: Record<string, AnyServiceSchema> = {
  gateway: GatewayService,
  auth: AuthService,
  users: UsersService,
  rounds: RoundsService,
  stores: StoresService,
  settings: SettingsService,
  notifier: NotifierService,
};

export function createBroker(config: Config, services: string[] = config.services): ServiceBroker {
  const unknown = services.filter((s) => !(s in serviceSchemas));
  if (unknown.length > 0) {
    throw new Error(
      `Unknown service(s) in SERVICES: ${unknown.join(", ")}; known: ${Object.keys(serviceSchemas).join(", ")}`,
    );
  }
  const options = brokerOptions(config);
  const broker = new GracefulBroker({
    ...options,
    stopped: async (b) => {
      await closeStoreOf(b);
    },
  });
  // Process-wide: the first broker of a process decides.
  if (config.transporter.startsWith("nats://")) {
    batchNatsWrites(config.internalsHooksOff, (m) => broker.getLogger("internals").warn(m));
  }
  bindConfig(broker, config);
  for (const name of services) broker.createService(serviceSchemas[name] as ServiceSchema);
  return broker;
}
