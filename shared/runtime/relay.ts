import type { ServiceBroker } from "moleculer";
import type { OutboxRelay } from "../outbox";

/**
 * Starts an outbox relay once the whole broker has started: embedded, its channel's consumers are
 * services of the same process, which must have opened their stores before they are handed anything.
 */
export function startRelay(broker: ServiceBroker, relay: OutboxRelay): void {
  if (broker.started) relay.start();
  else broker.localBus.once("$broker.started", () => relay.start());
}
