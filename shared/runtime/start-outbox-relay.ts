import type { Service } from "moleculer";
import { OutboxRelay, type Backlog, type OutboxSource } from "../outbox";
import { channelPublisher } from "./channels";
import { MetricNames } from "./metric-names";
import { labelledGauge } from "./metrics";

/**
 * Starts the outbox relay (shared/outbox/outbox-relay) of a producing service, wired to this process: it
 * publishes through the channels of this process's topology (shared/runtime/channels), reports through
 * the service's logger, and starts once the whole broker has started: embedded, its channel's consumers
 * are services of the same process, which must have opened their stores before they are handed anything.
 * With metrics on, each sweep sets the service's `outbox_backlog` and `outbox_oldest_seconds`. The
 * service stops it in its `stopped`.
 */
export function startOutboxRelay(service: Service, outbox: OutboxSource): OutboxRelay {
  const broker = service.broker;
  const relay = new OutboxRelay(outbox, channelPublisher(broker), (m, e) => service.logger.warn(m, e), {
    onBacklog: backlogGauges(service),
  });
  if (broker.started) relay.start();
  else broker.localBus.once("$broker.started", () => relay.start());
  return relay;
}

/** The service's two outbox gauges (at 0 until the first sweep), or nothing without metrics. */
function backlogGauges(service: Service): ((b: Backlog) => void) | undefined {
  const labels = { service: service.name };
  const documents = labelledGauge(
    service.broker,
    MetricNames.outboxBacklog,
    "service",
    "Documents holding facts not yet published to their channel",
  );
  const oldest = labelledGauge(
    service.broker,
    MetricNames.outboxOldest,
    "service",
    "Seconds since the oldest fact still waiting for its channel was recorded (0: none waits)",
  );
  if (!documents || !oldest) return undefined;
  documents.set(0, labels);
  oldest.set(0, labels);
  return (b) => {
    documents.set(b.documents, labels);
    oldest.set(b.oldest ? Math.max(0, (Date.now() - b.oldest.getTime()) / 1000) : 0, labels);
  };
}
