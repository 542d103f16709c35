/**
 * A periodic sweep of what has outlived its retention: named tasks, run one after the other soon after
 * start and then every `intervalMs`. Never two sweeps of one sweeper at once (a slow one delays the next
 * instead of overlapping it); a failing task is logged and the others still run, and the next sweep
 * tries again. Each task deletes idempotently, so several processes sweeping the same store at once is
 * harmless. Services own their tasks (each touches only its own collections); the sweeper only runs them.
 */
export interface SweepTask {
  name: string;
  /** Removes what is due at `now`; resolves to how many documents (or files) went. */
  run(now: Date): Promise<number>;
}

export interface SweeperOptions {
  intervalMs: number;
  /** Delay of the first sweep after `start` (default: at once, on the next turn). */
  firstDelayMs?: number;
  warn(message: string, err: unknown): void;
  /** Told what a sweep removed, by task (only when it removed something). */
  report?(removed: Record<string, number>): void;
  now?: () => Date;
}

export class Sweeper {
  private timer: NodeJS.Timeout | null = null;
  /**
   * The first sweep's timer. A stop clears it too: pending, it would keep the sweeper, its tasks and the
   * stores they hold reachable until it fires (a minute for the outbox's), after the broker has stopped.
   */
  private firstTimer: NodeJS.Timeout | null = null;
  private running: Promise<Record<string, number>> | null = null;
  private stopped = false;

  constructor(
    private readonly tasks: SweepTask[],
    private readonly opts: SweeperOptions,
  ) {}

  start(): void {
    this.stopped = false;
    const tick = () => void this.sweep();
    this.timer = setInterval(tick, this.opts.intervalMs).unref();
    this.firstTimer = setTimeout(tick, this.opts.firstDelayMs ?? 0).unref();
  }

  /** Runs a sweep now (or waits for the one running); resolves to what each task removed. */
  sweep(): Promise<Record<string, number>> {
    if (this.running) return this.running;
    if (this.stopped) return Promise.resolve({});
    this.running = this.runTasks().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** No sweep starts any more; resolves once the one running (if any) has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.firstTimer) clearTimeout(this.firstTimer);
    this.timer = null;
    this.firstTimer = null;
    await this.running;
  }

  private async runTasks(): Promise<Record<string, number>> {
    const removed: Record<string, number> = {};
    const now = (this.opts.now ?? (() => new Date()))();
    for (const task of this.tasks) {
      if (this.stopped) break;
      try {
        removed[task.name] = await task.run(now);
      } catch (err) {
        this.opts.warn(`Sweeping ${task.name} failed; the next sweep tries again.`, err);
      }
    }
    if (Object.values(removed).some((n) => n > 0)) this.opts.report?.(removed);
    return removed;
  }
}
