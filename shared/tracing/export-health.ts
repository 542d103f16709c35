/**
 * What both span exporters (Zipkin, OTLP) say of their own sending, one way: counts of spans exported
 * and dropped, one warning when the queue overflows while the collector answers, one warning per outage
 * (later failures only counted) and one info line with the count when spans get through again, and the
 * Prometheus view of it all (METRICS_PORT). Tracing must never cost a request anything, and a collector
 * that is down must not flood the log either.
 */
import { TracerExporters, type LoggerInstance, type Tracer } from "moleculer";
import { endpointOf, exporterGauges, reasonOf, type ExporterGauges } from "./span-fields";

export class ExportHealth {
  /** Spans dropped since start: finished while the queue was full, or in a batch that failed. */
  dropped = 0;
  /** Spans the endpoint accepted since start. */
  exported = 0;
  /** A batch failed and none got through since: the one warning is out. */
  failing = false;
  private droppedWhileFailing = 0;
  /** The queue overflowed while the endpoint answered: its one warning is out. */
  private overflowing = false;

  constructor(
    private readonly logger: LoggerInstance,
    /** The endpoint as logged (without credentials). */
    private readonly url: string,
    private readonly maxQueue: number,
    private readonly gauges: ExporterGauges | null,
  ) {}

  /** Spans now waiting to be sent. */
  queued(n: number): void {
    this.gauges?.queued.set(n);
  }

  /** A span finished while the queue held `maxQueue` spans: dropped. */
  full(): void {
    this.countDropped(1);
    if (this.failing) {
      this.droppedWhileFailing++;
    } else if (!this.overflowing) {
      this.overflowing = true;
      this.logger.warn(
        `Tracing queue full (${this.maxQueue} spans): newer spans are dropped until it drains`,
      );
    }
  }

  /** The queue is empty again: a later overflow warns again. */
  drained(): void {
    this.overflowing = false;
  }

  /** The endpoint took `n` spans. */
  accepted(n: number): void {
    this.exported += n;
    this.gauges?.exported.increment(undefined, n);
    if (this.failing) {
      this.failing = false;
      this.logger.info(
        `Spans reach ${this.url} again; ${this.droppedWhileFailing} were dropped while it did not answer`,
      );
    }
  }

  /** `n` spans were lost to a failed send. */
  failed(n: number, err: unknown): void {
    this.countDropped(n);
    if (this.failing) {
      this.droppedWhileFailing += n;
      return;
    }
    this.failing = true;
    this.droppedWhileFailing = n;
    this.logger.warn(
      `Spans could not be sent to ${this.url} (${reasonOf(err)}): ${n} dropped; ` +
        "spans are dropped without further warnings until it answers again",
    );
  }

  private countDropped(n: number): void {
    this.dropped += n;
    this.gauges?.dropped.increment(undefined, n);
  }
}

/** Waits for `work`, but not longer than `ms` (a stopping process sends what is left, bounded). */
export async function waitAtMost(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref();
  });
  await Promise.race([work, bound]);
  clearTimeout(timer);
}

/** What both exporters are configured with (TRACING_ENDPOINT; the interval and queue: shared/tracing/index.ts). */
export interface BoundedExporterOptions {
  /** Full URL of the endpoint (user:password@ → Basic auth). */
  endpoint: string;
  intervalMs: number;
  maxQueue: number;
  /** Spans per request (default 1,000). */
  batchSize?: number;
  /** How long one batch may take (default: intervalMs). */
  timeoutMs?: number;
  /** How long stopping may spend sending what is left (default 2 s). */
  stopTimeoutMs?: number;
}

/** A Moleculer span exporter with a bounded queue and an ExportHealth: what both exporters share. */
export abstract class BoundedExporter extends TracerExporters.Base {
  /** The endpoint without credentials (what is logged), and the Authorization header they stand for. */
  protected readonly url: string;
  protected readonly headers: Record<string, string>;
  protected readonly intervalMs: number;
  protected readonly maxQueue: number;
  protected readonly batchSize: number;
  protected readonly timeoutMs: number;
  protected readonly stopTimeoutMs: number;
  protected nodeID = "";
  /** Counts, warnings and metrics (from init on). */
  protected health: ExportHealth | null = null;

  constructor(opts: BoundedExporterOptions) {
    super({});
    const { url, headers } = endpointOf(opts.endpoint);
    this.url = url;
    this.headers = headers;
    this.intervalMs = opts.intervalMs;
    this.maxQueue = opts.maxQueue;
    this.batchSize = opts.batchSize ?? 1000;
    this.timeoutMs = opts.timeoutMs ?? opts.intervalMs;
    this.stopTimeoutMs = opts.stopTimeoutMs ?? 2000;
  }

  /** Spans dropped since start: finished while the queue was full, or in a batch that failed. */
  get dropped(): number {
    return this.health?.dropped ?? 0;
  }

  /** Spans the endpoint accepted since start. */
  get exported(): number {
    return this.health?.exported ?? 0;
  }

  override init(tracer: Tracer): void {
    super.init(tracer);
    this.nodeID = tracer.broker.nodeID;
    this.health = new ExportHealth(this.logger, this.url, this.maxQueue, exporterGauges(tracer.broker));
  }
}
