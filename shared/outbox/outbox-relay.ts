/**
 * Publishes what an outbox holds, through whatever `Publish` it is given (a service starts one with
 * shared/runtime/start-outbox-relay). A run publishes every pending entry, oldest first, and acknowledges
 * each one the channel took; an entry whose publication failed stays where it is for the next run. Runs
 * happen at start, on every `sweepMs` tick (entries left by a failure, a crash, or another instance of
 * the service), and when a change asks for one (`deliver`, which first tries its own entry directly, so
 * a healthy system publishes a fact right after the request that recorded it). A request either waits
 * for the publication (`deliver`) or not at all (`handOver`: the fact is stored, which is all its answer
 * needs). Removing the entry from its document follows on its own, since a fact published twice (a
 * crash before the removal) is dropped by the channel and ignored by its consumers.
 */
import type { Backlog, OutboxEntry, OutboxSource, PendingEntry } from "./entry";

/** Hands an entry to its channel; resolves once the channel has taken it (durably, where it can). */
export type Publish = (entry: OutboxEntry) => Promise<void>;

export interface RelayOptions {
  /** How often the outbox is swept for entries left behind. */
  sweepMs: number;
  /** Entries read per query. */
  batch: number;
  /** How long `deliver` waits for the channel before leaving the entry to the sweep. */
  deliverTimeoutMs: number;
  /** Told what still waits after each sweep (the outbox metrics), when the source can say. */
  onBacklog?: (backlog: Backlog) => void;
}

const defaults: RelayOptions = { sweepMs: 2000, batch: 100, deliverTimeoutMs: 2000 };

export class OutboxRelay {
  private readonly opts: RelayOptions;
  private running: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** Failures since the last success, so a channel that is down is reported once, not every sweep. */
  private failing = 0;
  /** Hand-overs and removals of delivered entries still under way; `stop` and `idle` wait for them. */
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly source: OutboxSource,
    private readonly publish: Publish,
    private readonly warn: (message: string, err?: unknown) => void,
    options: Partial<RelayOptions> = {},
  ) {
    this.opts = { ...defaults, ...options };
  }

  start(): void {
    this.stopped = false;
    void this.run();
    this.timer = setInterval(() => void this.sweep(), this.opts.sweepMs);
    this.timer.unref();
  }

  /** A timed run, then what it left behind for whoever watches the backlog. */
  private async sweep(): Promise<void> {
    await this.run();
    const { onBacklog } = this.opts;
    if (!onBacklog || !this.source.backlog || this.stopped) return;
    // A store that cannot be read is reported by the next run; the metric keeps its last value.
    const backlog = await this.source.backlog().catch(() => null);
    if (backlog) onBacklog(backlog);
  }

  /**
   * Delivers one entry just recorded without keeping the caller: its answer needs only the entry stored
   * (the outbox keeps it until the channel took it). A join used to wait here for its payment to be
   * written, the longest part of a winning join in a stampede.
   */
  handOver(p: PendingEntry): void {
    this.track(this.deliver(p));
  }

  /** Resolves once every hand-over and removal started before or meanwhile is done. */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  /**
   * Publishes one entry just recorded and resolves once the channel took it; its removal from the outbox
   * goes on without the caller. Under a stampede on one document that removal queues behind every other
   * write of the document (a tenth of a second for a hundred joins to one round), which the request need
   * not wait for. Never throws: an entry the channel did not take in time stays in the outbox and the
   * sweep publishes it (the change it announces is stored).
   */
  async deliver(p: PendingEntry): Promise<void> {
    if (this.stopped) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error("channel did not answer in time")),
        this.opts.deliverTimeoutMs,
      );
    });
    try {
      await Promise.race([this.publish(p.entry), timeout]);
      this.failing = 0;
    } catch (err) {
      this.reportFailure(p.entry, err);
      return;
    } finally {
      clearTimeout(timer);
    }
    this.track(
      this.source
        .acknowledge(p)
        .catch((err: unknown) =>
          this.warn(
            `${p.entry.channel} ${p.entry.id} published but still in the outbox; published again later`,
            err,
          ),
        ),
    );
  }

  /** Keeps `work` (which never rejects) until it is done, for `idle` and `stop`. */
  private track(work: Promise<void>): void {
    const tracked = work.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }

  /** One run at a time; a run asked for while one is going joins it. */
  run(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.running ??= this.drain().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /**
   * No new runs; waits for the one in progress (its entries are published or left in the outbox), for
   * hand-overs and for the removals of delivered entries, so the store is not closed under them.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
    await this.idle();
  }

  private async drain(): Promise<void> {
    let pending: PendingEntry[];
    try {
      pending = await this.source.pending(this.opts.batch);
    } catch (err) {
      this.warn("Outbox could not be read; it is read again on the next sweep", err);
      return;
    }
    for (const p of pending) {
      if (this.stopped) return;
      try {
        await this.publishOne(p);
      } catch (err) {
        // The channel is down or refusing: keep the order, try again on the next sweep.
        this.reportFailure(p.entry, err);
        return;
      }
    }
  }

  private async publishOne(p: PendingEntry): Promise<void> {
    await this.publish(p.entry);
    await this.source.acknowledge(p);
    this.failing = 0;
  }

  private reportFailure(entry: OutboxEntry, err: unknown): void {
    if (this.failing++ === 0) {
      this.warn(`${entry.channel} ${entry.id} not yet published; the outbox keeps it and tries again`, err);
    }
  }
}
