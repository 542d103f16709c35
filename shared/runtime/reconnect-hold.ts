/**
 * Calls held across a NATS reconnect, so that a broker restart of a second or two costs callers a wait
 * rather than an error (docs/decisions/0042-nats-outage.md).
 *
 * What is published while a NATS connection is down is not kept: nats.js empties its outbound buffer at
 * every reconnect attempt (NATS core is at most once), and the first attempt follows the loss at once.
 * And a call sent after this node is back, to a node that is not back yet, finds no subscriber and is
 * dropped by the server. Either way the call is lost without an error, and its caller learns of it
 * only from a probe or its timeout. So a call to a node is held, not sent:
 *
 * - while this node's connection is down;
 * - once it is back, until the node has been heard from again (its INFO: every node announces itself
 *   when it reconnects, and answers the DISCOVER this node sends when it does), for at most
 *   `confirmWithinMs` after this node's reconnect.
 *
 * A held call goes out as soon as that is over, or fails when its own deadline is `marginMs` away
 * (with `onExpiry`'s error: a 503 at the gateway, before the call's timeout would make it a 504). A
 * node dropped from the registry meanwhile fails its held calls with `onGone`'s error (retryable, so
 * they go to another instance). This module keeps the state; the liveness middleware feeds it from
 * the connection's status, the registry's events and each call.
 */

export interface ReconnectHoldOptions {
  /** Longest a call waits, after this node reconnected, for its callee to be heard from. */
  confirmWithinMs: number;
  /** A held call fails this long before its deadline, so the caller sees the hold's error, not a timeout. */
  marginMs: number;
}

interface Waiter {
  nodeID: string;
  resolve(): void;
  reject(err: Error): void;
  onGone(): Error;
  timer: NodeJS.Timeout;
}

export class ReconnectHold {
  private down = false;
  /** Nodes known when the connection was lost and not heard from since it came back. */
  private readonly awaited = new Set<string>();
  private readonly waiters = new Set<Waiter>();
  private confirmTimer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: ReconnectHoldOptions) {}

  /** The connection is lost: every call waits; each of `nodes` must be heard from again once it is back. */
  lost(nodes: Iterable<string>): void {
    this.down = true;
    if (this.confirmTimer) clearTimeout(this.confirmTimer);
    this.confirmTimer = null;
    for (const id of nodes) this.awaited.add(id);
  }

  /** The connection is back: calls to nodes heard from go out; the others wait `confirmWithinMs` at most. */
  back(): void {
    if (!this.down) return;
    this.down = false;
    this.confirmTimer = setTimeout(() => {
      this.confirmTimer = null;
      this.awaited.clear();
      this.release(() => true);
    }, this.opts.confirmWithinMs);
    this.confirmTimer.unref();
    this.release((w) => !this.awaited.has(w.nodeID));
  }

  /** `nodeID` announced itself (its INFO arrived): it listens again. */
  heard(nodeID: string): void {
    if (!this.awaited.delete(nodeID) || this.down) return;
    this.release((w) => w.nodeID === nodeID);
  }

  /** `nodeID` left the registry: its held calls fail, each with its `onGone` error. */
  gone(nodeID: string): void {
    this.awaited.delete(nodeID);
    for (const w of [...this.waiters]) {
      if (w.nodeID !== nodeID) continue;
      this.settle(w);
      w.reject(w.onGone());
    }
  }

  /** Whether a call to `nodeID` must wait now. */
  holds(nodeID: string): boolean {
    return this.down || this.awaited.has(nodeID);
  }

  /** Whether `nodeID` has not been heard from since this node's outage (it may not be back yet). */
  awaiting(nodeID: string): boolean {
    return this.awaited.has(nodeID);
  }

  /** Calls waiting now (for tests and the log). */
  get held(): number {
    return this.waiters.size;
  }

  /**
   * Resolves when a call to `nodeID` may be sent; rejects with `onExpiry()` once `deadlineMs` (the
   * call's time left) less the margin has passed, or with `onGone()` if the node leaves the registry.
   */
  wait(nodeID: string, deadlineMs: number, onExpiry: () => Error, onGone: () => Error): Promise<void> {
    if (!this.holds(nodeID)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        nodeID,
        resolve,
        reject,
        onGone,
        timer: setTimeout(
          () => {
            this.settle(waiter);
            reject(onExpiry());
          },
          Math.max(0, deadlineMs - this.opts.marginMs),
        ),
      };
      this.waiters.add(waiter);
    });
  }

  /** Nothing is held any more, now or later: every held call goes out (the middleware stops). */
  releaseAll(): void {
    if (this.confirmTimer) clearTimeout(this.confirmTimer);
    this.confirmTimer = null;
    this.down = false;
    this.awaited.clear();
    this.release(() => true);
  }

  private release(which: (w: Waiter) => boolean): void {
    for (const w of [...this.waiters]) {
      if (this.down || !which(w)) continue;
      this.settle(w);
      w.resolve();
    }
  }

  private settle(w: Waiter): void {
    clearTimeout(w.timer);
    this.waiters.delete(w);
  }
}
