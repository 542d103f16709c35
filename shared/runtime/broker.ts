/**
 * Builds a broker for a process: options from the configuration, the configuration bound to it (services
 * read it through configOf), the store closed when it stops, and the services the config names.
 */
import type { ServiceBroker, ServiceSchema } from "moleculer";
import { brokerOptions } from "../../moleculer.config";
import { bindConfig, type Config } from "../config";
import { closeStoreOf } from "../storage";
import { GracefulBroker } from "./shutdown";
import AuthService from "../../services/auth.service";
import GatewayService from "../../services/gateway.service";
import NotifierService from "../../services/notifier.service";
import RoundsService from "../../services/rounds.service";
import SettingsService from "../../services/settings.service";
import StoresService from "../../services/stores.service";
import UsersService from "../../services/users.service";
import { batchNatsWrites } from "./nats-batching";

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
