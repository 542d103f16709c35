/**
 * Moleculer's NATS transporter, told of nats.js 2.x reconnects. Moleculer 0.14 (and 0.15) handles a
 * reconnect of the nats 1.x client (`onConnected(true)`: transit announces this node with an INFO and
 * asks for everyone's), but only logs one of nats 2.x: a reconnected process stayed unannounced, its
 * peers dropped it for missed beats, `$transporter.connected` never came. This subclass, registered as
 * the transporter (app/broker-options.ts), does for 2.x what Moleculer does for 1.x: the connection's
 * loss sets `connected` false, its return calls `onConnected(true)`.
 *
 * And it keeps what NATS core would lose across a reconnect (docs/decisions/0042-nats-outage.md). nats.js
 * empties its outbound buffer at every dial, so a request, an answer or an event published while the
 * connection is down is gone without an error (Moleculer's own answer for 1.x, rejecting requests and
 * skipping answers while disconnected, turns a one-second NATS restart into errors). Published once this
 * node is back, one for a node not back yet finds no subscriber and is dropped too. So a packet is held
 * while the connection is down and, once it is back, while it goes to a node known at the loss that has
 * not announced itself again (its INFO: each node sends one when it reconnects, and answers the DISCOVER
 * this node sends when it does), for `peerBackWithinMs` at most. Held longer than a caller waits for an
 * answer (the broker's request timeout), a packet is of no use to anyone and is dropped.
 *
 * And it publishes what one turn of the event loop sends together. nats.js writes its buffer to the
 * socket at the end of the current microtask queue, so a process answering requests as each finishes
 * (after a store or cache round trip, each its own I/O callback) made one write, one system call and one
 * read for nats-server per packet. Queued here and published at `setImmediate`, after the turn's I/O
 * callbacks, a turn's packets reach nats.js within one microtask queue and go in one write; when idle,
 * the turn ends at once, so a lone request waits no longer (docs/performance.md, the lean change's A/B).
 */
import {
  Transporters,
  type GenericObject,
  type LoggerInstance,
  type Packets,
  type ServiceBroker,
  type Transit,
} from "moleculer";
import type { NatsConnection, Status } from "nats";

export interface ReconnectOptions {
  /**
   * Once this node is back, how long a packet for a node known at the loss waits for that node's INFO.
   * Nodes reconnect within nats.js's reconnect wait (2 s, and its jitter) of each other.
   */
  peerBackWithinMs: number;
}

const defaults: ReconnectOptions = { peerBackWithinMs: 3000 };

/**
 * After this node's connection is back, how long the cluster counts as still reconnecting: the peers'
 * own reconnect (within `peerBackWithinMs` of this one) and a beat or a heartbeat check after it. Meanwhile
 * a peer missing from the registry, or silent, is not taken for gone (./nats-calls-across-loss,
 * ./nats-discoverer).
 */
export const RECONNECT_WINDOW_MS = 5000;

/** Packets a caller waits for: a call, its answer, an event. Moleculer's own traffic (beats) is not held. */
const HELD_TYPES = new Set(["REQ", "RES", "EVENT"]);

type Packet = Packets.Packet;

interface Outgoing {
  topic: string;
  data: Buffer;
  meta: GenericObject;
  resolve(): void;
  reject(err: unknown): void;
}

interface Waiter {
  target: string | null;
  release(): void;
  timer: NodeJS.Timeout;
}

export class ReconnectingNatsTransporter extends Transporters.NATS {
  // The base classes' own fields (set by their constructor, init and connect; not in Moleculer's typings).
  declare connected: boolean;
  declare client: NatsConnection | null;
  declare broker: ServiceBroker;
  declare logger: LoggerInstance;

  private readonly reconnect: ReconnectOptions;
  /** The connection was up once and is down now (not before the first connect, nor after a close). */
  private down = false;
  /** When the connection last came back (0: never lost). */
  private backAt = 0;
  /** Other nodes available now, as the registry's events tell. */
  private readonly known = new Set<string>();
  /** Nodes known at the loss and not heard from since this node is back. */
  private readonly awaited = new Set<string>();
  private readonly waiters = new Set<Waiter>();
  private peerTimer: NodeJS.Timeout | null = null;
  private watching = false;
  private readonly lossListeners: (() => void)[] = [];
  /** Packets sent during this turn of the event loop, in order, published together at its end. */
  private outgoing: Outgoing[] = [];
  private flushing: NodeJS.Immediate | null = null;

  constructor(opts: Record<string, unknown>, reconnect: Partial<ReconnectOptions> = {}) {
    super(opts);
    this.reconnect = { ...defaults, ...reconnect };
  }

  override init(
    transit: Transit,
    messageHandler: (cmd: string, msg: string) => void,
    afterConnect: (r: boolean) => void,
  ) {
    super.init(transit, messageHandler, afterConnect);
    // An INFO from a node: it listens again (Moleculer's documented local events).
    const heard = ({ node }: { node: { id: string } }) => {
      this.known.add(node.id);
      this.heard(node.id);
    };
    this.broker.localBus.on("$node.connected", heard);
    this.broker.localBus.on("$node.updated", heard);
    // Dropped from the registry: Moleculer has rejected the calls to it, nothing waits for it.
    this.broker.localBus.on("$node.disconnected", ({ node }: { node: { id: string } }) => {
      this.known.delete(node.id);
      this.heard(node.id);
    });
  }

  override onConnected(wasReconnect?: boolean): Promise<unknown> {
    if (!this.watching && this.client) {
      this.watching = true;
      // Without its status the transporter is Moleculer's own again (reconnects only logged), never a crash.
      this.watch(this.client).catch((err: unknown) =>
        this.logger.warn("NATS status no longer watched: a reconnect will not be announced.", err),
      );
    }
    return super.onConnected(wasReconnect);
  }

  override prepublish(packet: Packet): Promise<void> {
    if (!this.holds(packet)) return super.prepublish(packet);
    return this.hold(packet).then((send) => (send ? super.prepublish(packet) : undefined));
  }

  /** Queues the packet for the end of this turn (see above); settles once nats.js has taken it. */
  override send(topic: string, data: Buffer, meta: GenericObject): Promise<void> {
    return new Promise((resolve, reject) => {
      this.outgoing.push({ topic, data, meta, resolve, reject });
      this.flushing ??= setImmediate(() => this.publishQueued());
    });
  }

  /** Hands the turn's packets to nats.js in the order they were sent (Moleculer's `send` for each). */
  private publishQueued(): void {
    if (this.flushing) clearImmediate(this.flushing);
    this.flushing = null;
    const batch = this.outgoing;
    this.outgoing = [];
    for (const p of batch) {
      try {
        // A publish on a closed connection throws: its sender's promise rejects, as without the queue.
        super.send(p.topic, p.data, p.meta).then(p.resolve, p.reject);
      } catch (err) {
        p.reject(err);
      }
    }
  }

  override disconnect(): Promise<unknown> {
    this.releaseAll();
    // What was sent before (the DISCONNECT packet among it) goes before the connection is drained.
    this.publishQueued();
    return Promise.resolve(super.disconnect());
  }

  /** The connection's status, from nats.js's public status iterator. */
  private async watch(client: NatsConnection): Promise<void> {
    for await (const s of client.status() as AsyncIterable<Status>) {
      if (s.type === "disconnect") this.lost();
      else if (s.type === "reconnect") this.back();
    }
  }

  private lost(): void {
    if (this.down) return;
    this.down = true;
    this.connected = false;
    if (this.peerTimer) clearTimeout(this.peerTimer);
    this.peerTimer = null;
    for (const id of this.known) this.awaited.add(id);
    for (const listener of this.lossListeners) listener();
    this.logger.warn("NATS client is disconnected: calls, answers and events are held until it is back.");
  }

  private back(): void {
    if (!this.down) return;
    this.down = false;
    this.backAt = Date.now();
    this.logger.info(
      `NATS client is reconnected: ${this.waiters.size} held packet(s) go out as their nodes announce themselves.`,
    );
    this.peerTimer = setTimeout(() => {
      this.peerTimer = null;
      this.awaited.clear();
      this.release(() => true);
    }, this.reconnect.peerBackWithinMs);
    this.peerTimer.unref();
    // As Moleculer does on a nats 1.x reconnect: connected again, INFO sent, everyone's asked for.
    void this.onConnected(true);
    this.release((w) => w.target === null || !this.awaited.has(w.target));
  }

  private heard(nodeID: string): void {
    if (!this.awaited.delete(nodeID) || this.down) return;
    this.release((w) => w.target === nodeID);
  }

  private holds(packet: Packet): boolean {
    if (!HELD_TYPES.has(packet.type)) return false;
    return this.down || (typeof packet.target === "string" && this.awaited.has(packet.target));
  }

  /** Resolves true once `packet` may go out, false once it has waited longer than anyone waits for it. */
  private hold(packet: Packet): Promise<boolean> {
    const target = typeof packet.target === "string" ? packet.target : null;
    return this.wait(target).then((released) => {
      if (!released) {
        this.logger.warn(
          `A ${packet.type} packet held across a NATS reconnect was dropped: no one waits for it now.`,
        );
      }
      return released;
    });
  }

  /**
   * Resolves once this node is connected and `nodeID` has announced itself since (or its time to do so
   * is up, or it left the registry): what is sent to it from then on reaches it. At once when nothing is
   * awaited.
   */
  whenReachable(nodeID: string): Promise<void> {
    if (!this.down && !this.awaited.has(nodeID)) return Promise.resolve();
    return this.wait(nodeID).then(() => undefined);
  }

  /**
   * Whether the connection is lost, or came back within `afterMs`: while the other nodes reconnect too,
   * one may miss its heartbeats and be dropped from the registry for a moment.
   */
  withinReconnect(afterMs: number, now = Date.now()): boolean {
    return this.down || (this.backAt !== 0 && now - this.backAt < afterMs);
  }

  /** Calls `listener` each time the connection is lost (before anything is held). */
  onLoss(listener: () => void): void {
    this.lossListeners.push(listener);
  }

  /** Resolves true once released, false after the broker's request timeout. */
  private wait(target: string | null): Promise<boolean> {
    return new Promise((resolve) => {
      const waiter: Waiter = {
        target,
        release: () => resolve(true),
        timer: setTimeout(() => {
          this.waiters.delete(waiter);
          resolve(false);
        }, this.broker.options.requestTimeout || 10_000),
      };
      waiter.timer.unref();
      this.waiters.add(waiter);
    });
  }

  private release(which: (w: Waiter) => boolean): void {
    if (this.down) return;
    for (const w of [...this.waiters]) {
      if (!which(w)) continue;
      clearTimeout(w.timer);
      this.waiters.delete(w);
      w.release();
    }
  }

  private releaseAll(): void {
    this.down = false;
    this.awaited.clear();
    if (this.peerTimer) clearTimeout(this.peerTimer);
    this.peerTimer = null;
    this.release(() => true);
  }
}
