/**
 * Graceful stop. Moleculer's own stop already tells the other nodes first (an empty INFO: no new calls
 * are routed here), waits for the calls in flight (`tracking.shutdownTimeout`), stops the services,
 * then disconnects. Three things it does not do, added here:
 * - before anything stops, with SHUTDOWN_DELAY_MS, a time of leaving (LEAVING_EVENT): readiness answers
 *   503 (checkReadiness) while everything keeps serving, so that a load balancer probing it routes new
 *   connections elsewhere before the gateway stops accepting (an HTTP load balancer learns only from
 *   the probe, unlike Moleculer's nodes, which learn from the INFO);
 * - tell the local services *before* Moleculer's wait, so the gateway stops accepting connections and
 *   the notifier starts no new batch while the work in hand finishes (STOPPING_EVENT);
 * - a bound on the whole stop, with exit code 0 only for a stop that completed (stopOnSignals).
 */
import { ServiceBroker } from "moleculer";

/** Broadcast to the local services when the stop is asked for: report not ready, keep serving. */
export const LEAVING_EVENT = "$broker.leaving";

/** Broadcast to the local services when the broker begins to stop, before it waits for work in flight. */
export const STOPPING_EVENT = "$broker.stopping";

/** After SHUTDOWN_TIMEOUT_MS of waiting for work in flight: time left to hand back messages and disconnect. */
export const CLOSE_MARGIN_MS = 5000;

/** Brokers whose stop has been asked for: their readiness is 503 from then on. */
const leavingBrokers = new WeakSet<ServiceBroker>();

/** True once the broker's stop has been asked for (its delay running, or the stop itself). */
export const isLeaving = (broker: ServiceBroker): boolean => leavingBrokers.has(broker);

/** Marks the broker as leaving and tells its local services (LEAVING_EVENT), once. */
function markLeaving(broker: ServiceBroker): void {
  if (leavingBrokers.has(broker)) return;
  leavingBrokers.add(broker);
  // Local-bus listeners only: nothing to wait for, and a failing one must not prevent the stop.
  broker
    .broadcastLocal(LEAVING_EVENT)
    .catch((err: unknown) => broker.logger.warn("A service failed to prepare for leaving", err));
}

export class GracefulBroker extends ServiceBroker {
  private stopAnnounced = false;

  override async stop(): Promise<void> {
    if (!this.stopAnnounced) {
      this.stopAnnounced = true;
      markLeaving(this);
      // Without a listener this resolves at once; a failing handler must not prevent the stop.
      await this.broadcastLocal(STOPPING_EVENT).catch((err: unknown) =>
        this.logger.warn("A service failed to prepare for the stop", err),
      );
    }
    return super.stop();
  }
}

export interface StopBounds {
  /** SHUTDOWN_DELAY_MS: served while reported not ready, before the stop begins. */
  delayMs: number;
  /** SHUTDOWN_TIMEOUT_MS: what the work in flight gets once the stop has begun. */
  timeoutMs: number;
}

/**
 * Reports not ready at once, keeps serving for `delayMs`, then stops the broker (the work in flight
 * gets `timeoutMs`). Resolves with the exit code: 0 for a stop that completed, 1 for one that failed
 * or overran delay + timeout + CLOSE_MARGIN_MS (what was left unacknowledged is redelivered elsewhere).
 */
export function stopGracefully(
  broker: ServiceBroker,
  bounds: StopBounds,
  say: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<number> {
  const bound = bounds.delayMs + bounds.timeoutMs + CLOSE_MARGIN_MS;
  return new Promise<number>((resolve) => {
    const force = setTimeout(() => {
      say(`Stop did not complete within ${bound} ms: exiting`);
      resolve(1);
    }, bound);
    markLeaving(broker);
    const delay = new Promise<void>((r) => setTimeout(r, bounds.delayMs));
    void delay
      .then(() => broker.stop())
      .then(
        () => resolve(0),
        (err: unknown) => {
          say(`Stop failed: ${(err as Error)?.message}`);
          resolve(1);
        },
      )
      .finally(() => clearTimeout(force));
  });
}

/**
 * SIGTERM (orchestrators) and SIGINT (Ctrl-C) stop the broker gracefully (stopGracefully), then exit
 * with its code; a second signal exits 1 at once.
 */
export function stopOnSignals(
  broker: ServiceBroker,
  bounds: StopBounds,
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
      bounds.delayMs > 0
        ? `${signal} received: not ready, serving ${bounds.delayMs} ms more, then finishing the work in flight (at most ${bounds.timeoutMs} ms) and exiting`
        : `${signal} received: finishing the work in flight (at most ${bounds.timeoutMs} ms), then exiting`,
    );
    void stopGracefully(broker, bounds).then(exit);
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}
