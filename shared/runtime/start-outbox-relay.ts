import type { Service } from "moleculer";
import { OutboxRelay, type OutboxSource } from "../outbox";
import { channelPublisher } from "./channels";

/**
 * Starts the outbox relay (shared/outbox/outbox-relay) of a producing service, wired to this process: it
 * publishes through the channels of this process's topology (shared/runtime/channels), reports through
 * the service's logger, and starts once the whole broker has started: embedded, its channel's consumers
 * are services of the same process, which must have opened their stores before they are handed anything.
 * The service stops it in its `stopped`.
 */
export function startOutboxRelay(service: Service, outbox: OutboxSource): OutboxRelay {
  const broker = service.broker;
  const relay = new OutboxRelay(outbox, channelPublisher(broker), (m, e) => service.logger.warn(m, e));
  if (broker.started) relay.start();
  else broker.localBus.once("$broker.started", () => relay.start());
  return relay;
}
