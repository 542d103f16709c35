/**
 * Graceful stop. Moleculer's own stop already tells the other nodes first (an empty INFO: no new calls
 * are routed here), waits for the calls in flight (`tracking.shutdownTimeout`), stops the services,
 * then disconnects. Two things it does not do, added here: tell the local services *before* that
 * wait, so the gateway stops accepting connections and the notifier starts no new batch while the
 * work in hand finishes (STOPPING_EVENT); and a bound on the whole stop, with exit code 0 only for a
 * stop that completed (stopOnSignals).
 */
import { ServiceBroker } from "moleculer";

/** Broadcast to the local services when the broker begins to stop, before it waits for work in flight. */
export const STOPPING_EVENT = "$broker.stopping";

/** After SHUTDOWN_TIMEOUT_MS of waiting for work in flight: time left to hand back messages and disconnect. */
export const CLOSE_MARGIN_MS = 5000;

export class GracefulBroker extends ServiceBroker {
  private stopAnnounced = false;

  override async stop(): Promise<void> {
    if (!this.stopAnnounced) {
      this.stopAnnounced = true;
      // Without a listener this resolves at once; a failing handler must not prevent the stop.
      await this.broadcastLocal(STOPPING_EVENT).catch((err: unknown) =>
        this.logger.warn("A service failed to prepare for the stop", err),
      );
    }
    return super.stop();
  }
}

/**
 * SIGTERM (orchestrators) and SIGINT (Ctrl-C) stop the broker, then exit 0. A stop that overruns the
 * bound exits 1 (what was left unacknowledged is redelivered elsewhere); a second signal exits at once.
 */
export function stopOnSignals(
  broker: ServiceBroker,
  shutdownTimeoutMs: number,
  exit: (code: number) => void = (code) => process.exit(code),
): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      process.stderr.write(`${signal} received again: exiting without waiting\n`);
      exit(1);
      return;
    }
    stopping = true;
    broker.logger.info(
      `${signal} received: finishing the work in flight (at most ${shutdownTimeoutMs} ms), then exiting`,
    );
    const bound = shutdownTimeoutMs + CLOSE_MARGIN_MS;
    const force = setTimeout(() => {
      process.stderr.write(`Stop did not complete within ${bound} ms: exiting\n`);
      exit(1);
    }, bound);
    void broker.stop().then(
      () => {
        clearTimeout(force);
        exit(0);
      },
      (err: unknown) => {
        process.stderr.write(`Stop failed: ${(err as Error)?.message}\n`);
        exit(1);
      },
    );
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}
