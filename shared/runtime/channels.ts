/**
 * Durable channels for the facts services announce to each other (`round.member.joined`,
 * `store.event.created`), fed by each producer's outbox (shared/outbox).
 *
 * With NATS, a fact goes to JetStream through @moleculer/channels: it is stored by the server before the
 * publication resolves, each consuming service reads it through its own durable consumer group, and a
 * consumer that dies before acknowledging gets it again. The entry id travels as JetStream's message id,
 * so a fact the relay publishes twice (a crash between publishing and acknowledging) is stored once.
 *
 * Embedded (one process, no NATS), the producer's outbox is the queue: a publication calls every local
 * consumer of the channel and resolves only when all of them have handled it, so the relay acknowledges
 * nothing that was not handled, and keeps trying what failed (as the notifier's local queue does).
 */
import type { Service, ServiceBroker } from "moleculer";
import { check } from "../validation";
import type { Publish } from "../outbox";
import { startFactSpan, traceHeaders } from "../tracing/propagation";

export const Channels = {
  roundMemberJoined: "round.member.joined",
  storeEventCreated: "store.event.created",
} as const;

type ChannelHandler = (this: Service, payload: unknown, raw?: unknown) => Promise<void>;

interface ChannelDefinition {
  group?: string;
  handler: ChannelHandler;
}

type Sender = (
  channel: string,
  payload: unknown,
  opts?: { msgID?: string; headers?: Record<string, string> },
) => Promise<void>;

/** The broker's JetStream publication (the channels middleware's `sendToChannel`), or null embedded. */
export const channelSender = (broker: ServiceBroker): Sender | null => {
  const send = (broker as unknown as { sendToChannel?: Sender }).sendToChannel;
  return typeof send === "function" ? send.bind(broker) : null;
};

/** True when channels ride on JetStream (the channels middleware is installed). */
export const hasDurableChannels = (broker: ServiceBroker): boolean => channelSender(broker) !== null;

/** Every consumer of `channel` among this process's services. */
function localConsumers(
  broker: ServiceBroker,
  channel: string,
): Array<{ svc: Service; def: ChannelDefinition }> {
  return broker.services.flatMap((svc) => {
    const def = (svc.schema as { channels?: Record<string, ChannelDefinition | ChannelHandler> }).channels?.[
      channel
    ];
    if (!def) return [];
    return [{ svc, def: typeof def === "function" ? { handler: def } : def }];
  });
}

/** How the relay hands an entry to its channel in this process's topology. */
export function channelPublisher(broker: ServiceBroker): Publish {
  const send = channelSender(broker);
  // The entry's trace context travels beside the payload (headers; embedded, the consumer's second
  // argument), so the payload stays exactly what the contract says.
  if (send) {
    return (entry) =>
      send(
        entry.channel,
        entry.payload,
        entry.trace ? { msgID: entry.id, headers: traceHeaders(entry.trace) } : { msgID: entry.id },
      );
  }
  return async (entry) => {
    const consumers = localConsumers(broker, entry.channel);
    const delivery = entry.trace ? { trace: entry.trace } : undefined;
    await Promise.all(consumers.map(({ svc, def }) => def.handler.call(svc, entry.payload, delivery)));
  };
}

/** What JetStream passes next to a payload: how often this message was delivered before. */
interface DeliveryInfo {
  info?: { redeliveryCount?: number };
  working?: () => void;
}

/** How long JetStream waits for a fact's acknowledgement before handing it to another consumer. */
const FACT_ACK_WAIT_SECONDS = 10;

/**
 * Consumer options shared by the fact channels: handled in milliseconds, so a consumer killed with facts
 * in hand has them handed out again after FACT_ACK_WAIT_SECONDS (its replacement, or the restarted
 * process, gets them); patient retries, then the dead-letter queue.
 */
export const factChannel = {
  maxInFlight: 16,
  nats: { consumerOptions: { config: { ack_wait: FACT_ACK_WAIT_SECONDS * 1e9 } } },
  // A consumer whose store is down keeps failing: with the pause below, 1,000 deliveries span about
  // 80 minutes before the message is moved to the dead-letter queue (kept there, never dropped).
  maxRetries: 1000,
} as const;

/**
 * A channel handler that validates its payload against the contract and, when the work fails, waits
 * before handing the message back (JetStream would redeliver at once): 1 s, 2 s, 4 s, then 5 s (inside
 * the acknowledgement window, and short enough that a stopping consumer is not held up for long).
 * With tracing on, each delivery is a span continuing the trace of the request that recorded the fact.
 */
export function factHandler<P, S extends Service = Service>(
  channel: { name: string; group?: string },
  schema: object,
  work: (this: S, payload: P) => Promise<void>,
): (this: S, payload: unknown, raw?: unknown) => Promise<void> {
  return async function handle(this: S, payload: unknown, raw?: unknown) {
    const span = startFactSpan(this, channel, raw);
    const valid = check(schema, payload);
    if (valid !== true) {
      // A malformed fact can never succeed: report it and let it go (acknowledged, not retried forever).
      this.logger.error("Malformed message dropped", { issues: valid });
      span?.addTags({ malformed: true }).finish();
      return;
    }
    try {
      await work.call(this, payload as P);
      span?.finish();
    } catch (err) {
      // The span ends with the work: the pause below is the channel's, not the handling's.
      span?.setError(err as Error).finish();
      const delivery = raw as DeliveryInfo | undefined;
      const redeliveries = delivery?.info?.redeliveryCount;
      if (redeliveries !== undefined) {
        // The pause stays inside the acknowledgement window: the message is still this consumer's.
        delivery?.working?.();
        await new Promise((r) => setTimeout(r, Math.min(5000, 1000 * 2 ** Math.max(0, redeliveries - 1))));
      }
      throw err;
    }
  };
}
