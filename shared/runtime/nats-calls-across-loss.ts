/**
 * A call in flight when this node's NATS connection drops may have lost its request or its answer (NATS
 * core delivers at most once, and nats.js drops what it had not written). Moleculer would let it wait
 * out its whole timeout (REQUEST_TIMEOUT_MS, then 504), although it will most likely never be answered.
 *
 * This middleware (Moleculer's documented `remoteAction` hook) gives such a call until its callee is
 * reachable again (./nats-transporter: this node back, the callee announced) and `settleMs` more, for an
 * answer the callee held across the outage; one still unanswered then is rejected with Moleculer's
 * retryable RequestRejectedError: the broker's retry policy repeats a read or a join on it, and a call
 * it never repeats (a refresh) is answered 503, which the client may repeat
 * (docs/decisions/0042-nats-outage.md). Its pending request is removed with transit's
 * `removePendingRequest`, as an answer would have removed it.
 */
import { Errors, type Context, type Middleware, type ServiceBroker } from "moleculer";
import { RECONNECT_WINDOW_MS, type ReconnectingNatsTransporter } from "./nats-transporter";

interface InFlight {
  nodeID: string;
  action: string;
  reject(err: Error): void;
}

/** How long a call pending across a loss waits, once its callee is reachable, for the answer it held. */
const SETTLE_MS = 1000;

/**
 * Within RECONNECT_WINDOW_MS of this node's reconnect, how long a call that finds no node of its service
 * waits for one to announce itself again: the others reconnect on their own schedule.
 */
const REJOIN_WAIT_MS = 3000;

/** Moleculer's errors for "no node of this service now" (retryable, but raised before any node is tried). */
const noEndpoint = (err: unknown): boolean => {
  const type = (err as { type?: unknown } | null)?.type;
  return type === "SERVICE_NOT_AVAILABLE" || type === "SERVICE_NOT_FOUND";
};

export function CallsAcrossLossMiddleware(
  transporter: ReconnectingNatsTransporter,
  settleMs = SETTLE_MS,
): Middleware {
  let broker: ServiceBroker;
  const inFlight = new Map<string, InFlight>();

  const giveUp = (id: string, call: InFlight) => {
    if (inFlight.get(id) !== call) return;
    inFlight.delete(id);
    broker.transit?.removePendingRequest(id);
    broker
      .getLogger("transporter")
      .warn(
        `A call to '${call.nodeID}' (${call.action}) pending across a NATS reconnect got no answer: rejected.`,
      );
    call.reject(new Errors.RequestRejectedError({ action: call.action, nodeID: call.nodeID }));
  };

  transporter.onLoss(() => {
    for (const [id, call] of inFlight) {
      void transporter
        .whenReachable(call.nodeID)
        .then(() => new Promise((r) => setTimeout(r, settleMs).unref()))
        .then(() => giveUp(id, call));
    }
  });

  return {
    name: "CallsAcrossLoss",
    created(b: ServiceBroker) {
      broker = b;
    },
    // A call made while the cluster reconnects that finds its service's nodes dropped for a moment waits
    // for one to be back (broker.waitForServices) and is made once more, instead of a fast 503.
    call(next: (action: string, params?: unknown, opts?: unknown) => Promise<unknown>) {
      return (action: string, params?: unknown, opts?: unknown) =>
        next(action, params, opts).catch((err: unknown) => {
          if (!noEndpoint(err) || !transporter.withinReconnect(RECONNECT_WINDOW_MS)) throw err;
          const service = action.slice(0, action.lastIndexOf("."));
          return broker.waitForServices(service, REJOIN_WAIT_MS, 50).then(
            () => next(action, params, opts),
            () => {
              throw err;
            },
          );
        });
    },
    remoteAction(next: (ctx: Context) => Promise<unknown>) {
      return (ctx: Context) =>
        new Promise((resolve, reject) => {
          const call: InFlight = { nodeID: ctx.nodeID ?? "", action: ctx.action?.name ?? "?", reject };
          inFlight.set(ctx.id, call);
          const done = () => {
            if (inFlight.get(ctx.id) === call) inFlight.delete(ctx.id);
          };
          next(ctx).then(
            (value) => {
              done();
              resolve(value);
            },
            (err: unknown) => {
              done();
              reject(err);
            },
          );
        });
    },
  } as unknown as Middleware;
}
