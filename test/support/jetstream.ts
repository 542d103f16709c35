/** What the project's JetStream consumers still have to handle, for tests that wait on durable facts. */
import { connect, type ConnectionOptions } from "nats";

/**
 * Resolves once every consumer of this namespace's streams has handled (acknowledged) all it was given
 * and has nothing left to be given; rejects after `timeoutMs`.
 */
export async function channelsDrained(
  nats: ConnectionOptions,
  namespace: string,
  timeoutMs = 15_000,
): Promise<void> {
  const nc = await connect(nats);
  try {
    const jsm = await nc.jetstreamManager();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let busy = 0;
      for await (const stream of jsm.streams.list()) {
        if (!stream.config.name.startsWith(`${namespace}_`)) continue;
        for await (const c of jsm.consumers.list(stream.config.name))
          busy += c.num_pending + c.num_ack_pending;
      }
      if (busy === 0) return;
      if (Date.now() > deadline)
        throw new Error(`JetStream consumers still have ${busy} message(s) after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await nc.close();
  }
}
