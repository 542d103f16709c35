/**
 * Moleculer's local discoverer (its default), which drops a node silent for longer than
 * `heartbeatTimeout` and rejects the calls pending to it, except while this node's own NATS connection
 * is down or came back less than RECONNECT_WINDOW_MS (./nats-transporter) ago. Then the beats it missed
 * were lost on its own side, and say nothing of the peers: every node of a cluster loses NATS together
 * when the server restarts, and comes back within nats.js's reconnect wait (2 s, and its jitter) of the
 * others. A peer dropped for them took its pending calls with it (RequestRejectedError: a retry, or a
 * 503 for a call never repeated) although it was about to answer them
 * (docs/decisions/0042-nats-outage.md). A peer that really died meanwhile has stayed silent, and the
 * first check after that window drops it.
 *
 * A subclass of Moleculer's documented discoverer class, given as the registry's `discoverer`
 * (app/broker-options.ts), overriding its public `checkRemoteNodes`.
 */
import { Discoverers } from "moleculer";
import { RECONNECT_WINDOW_MS, type ReconnectingNatsTransporter } from "./nats-transporter";

export class ReconnectAwareDiscoverer extends Discoverers.Local {
  constructor(private readonly transporter: ReconnectingNatsTransporter) {
    super();
  }

  override checkRemoteNodes(): void {
    if (this.transporter.withinReconnect(RECONNECT_WINDOW_MS)) return;
    super.checkRemoteNodes();
  }
}
