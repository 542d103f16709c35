/**
 * The queue in embedded mode (no NATS): the job records in the store are the queue. A kick processes
 * every unfinished job, oldest first, one at a time; start-up kicks once, so a job accepted before a
 * crash is delivered after the restart. A failed delivery is tried again after a pause.
 */
export class LocalJobQueue {
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly unfinished: () => Promise<string[]>,
    private readonly deliver: (jobId: string) => Promise<void>,
    private readonly onError: (jobId: string, err: unknown) => Promise<void>,
    private readonly retryDelayMs = 1000,
  ) {}

  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain().finally(() => {
      this.running = null;
      if (this.again) {
        this.again = false;
        this.kick();
      }
    });
  }

  private async drain(): Promise<void> {
    let failures = 0;
    let ids: string[] = [];
    try {
      ids = await this.unfinished();
    } catch (err) {
      failures++;
      await this.onError("(listing unfinished jobs)", err);
    }
    for (const id of ids) {
      if (this.stopped) return;
      try {
        await this.deliver(id);
      } catch (err) {
        failures++;
        await this.onError(id, err);
      }
    }
    if (failures > 0 && !this.stopped) {
      this.timer = setTimeout(() => this.kick(), this.retryDelayMs);
      this.timer.unref();
    }
  }

  /** Waits for the job in hand (a stop mid-job leaves it unfinished: the next start resumes it). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
