import type { Service } from "moleculer";
import {
  OUTBOX_RETENTION_MS,
  OUTBOX_SWEEP_INTERVAL_MS,
  OutboxRelay,
  outboxExpiryTask,
  type Backlog,
  type ExpiringOutbox,
  type OutboxSource,
} from "../outbox";
import { channelPublisher } from "./channels";
import { MetricNames } from "./metric-names";
import { labelledGauge } from "./metrics";
import { Sweeper } from "./sweeper";

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

/**
 * Starts the hourly sweep of the service's outbox leftovers (shared/outbox/expiry): entries older than
 * OUTBOX_RETENTION_MS (seven days) are dropped, each logged as an error naming the fact lost. Its first sweep
 * comes a minute after start, out of the way of the start itself. The service stops it in its
 * `stopped`, before its relay.
 */
export function startOutboxSweeper(service: Service, outbox: ExpiringOutbox): Sweeper {
  const sweeper = new Sweeper(
    [
      outboxExpiryTask(`${service.name} outbox leftovers`, outbox, OUTBOX_RETENTION_MS, (line) =>
        service.logger.error(line),
      ),
    ],
    {
      intervalMs: OUTBOX_SWEEP_INTERVAL_MS,
      firstDelayMs: 60_000,
      warn: (m, e) => service.logger.warn(m, e),
    },
  );
  sweeper.start();
  return sweeper;
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
