/**
 * Sends finished spans to a Zipkin v2 endpoint (`POST` of a JSON array; Zipkin, Jaeger's Zipkin
 * collector and Grafana Tempo's zipkin receiver all take it), batched.
 *
 * Moleculer's own Zipkin exporter holds every span finished between two flushes without limit, keeps
 * the span objects (and through them each call's context) until then, posts without a timeout and logs
 * every failed flush. Tracing must never cost a request anything, so here:
 * - a span becomes its small Zipkin form as it finishes (the context is let go at once) and waits in a
 *   queue of at most `maxQueue` spans; a span finished while it is full is dropped and counted;
 * - every `intervalMs` (and as soon as `batchSize` spans wait, while the collector answers) the queue is
 *   posted in batches of `batchSize`, one request at a time, each abandoned after `timeoutMs`;
 * - a batch that fails is dropped with whatever waits behind it, never retried; the first failure logs
 *   one warning, later ones nothing, until a batch gets through again (one info line with the count);
 * - the timer is unref'ed (it never keeps a process alive) and stopping sends what is left, bounded;
 * - with metrics on (METRICS_PORT), `tracing_spans_queued`, `tracing_spans_exported_total` and
 *   `tracing_spans_dropped_total` show it at /metrics.
 */
import type { Span, Tracer } from "moleculer";
import { zipkinSpanId, zipkinTraceId } from "./ids";
import { BoundedExporter, waitAtMost, type BoundedExporterOptions, type ExportHealth } from "./export-health";
import { spanKindOf, spanTags } from "./span-fields";

/** One span in Zipkin's v2 JSON (https://zipkin.io/zipkin-api/#/default/post_spans). */
export interface ZipkinSpan {
  traceId: string;
  id: string;
  parentId?: string;
  name: string;
  kind: "SERVER" | "CONSUMER";
  /** Epoch microseconds. */
  timestamp: number;
  /** Microseconds, at least 1. */
  duration: number;
  localEndpoint: { serviceName: string };
  tags: Record<string, string>;
}

/** Spans per request: 1,000 by default, a few hundred KB of JSON, serialised in a few milliseconds. */
export type ZipkinExporterOptions = BoundedExporterOptions;

/** Zipkin's tags are strings. */
function asStrings(tags: Record<string, string | number | boolean>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(tags)) out[key] = String(tags[key]);
  return out;
}

export class BoundedZipkinExporter extends BoundedExporter {
  /** Spans waiting to be sent, oldest first; never longer than maxQueue. */
  readonly queue: ZipkinSpan[] = [];

  private timer: NodeJS.Timeout | null = null;
  private sending: Promise<void> | null = null;
  private stopping = false;
  /** The endpoint's headers with the body's type (Zipkin takes a JSON array). */
  private readonly postHeaders: Record<string, string>;

  constructor(opts: ZipkinExporterOptions) {
    super(opts);
    this.postHeaders = { "Content-Type": "application/json", ...this.headers };
  }

  override init(tracer: Tracer): void {
    super.init(tracer);
    this.timer = setInterval(() => void this.flush(), this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    // What a stopping process finished last is sent once, within stopTimeoutMs; what does not fit is lost.
    const last = (async () => {
      await this.sending;
      if (this.queue.length > 0) await this.send(this.stopTimeoutMs, false);
    })();
    await waitAtMost(last, this.stopTimeoutMs);
  }

  override spanFinished(span: Span): void {
    const health = this.health;
    if (!health) return;
    if (this.queue.length >= this.maxQueue) return health.full();
    this.queue.push(this.toZipkin(span));
    health.queued(this.queue.length);
    // Under load, send as soon as a batch is full (while the endpoint answers; else the timer tries).
    if (this.queue.length >= this.batchSize && !health.failing && !this.sending && !this.stopping) {
      void this.flush();
    }
  }

  /** Sends what waits, unless a send is already going (then that one is awaited). */
  flush(): Promise<void> {
    if (this.sending) return this.sending;
    if (this.queue.length === 0) return Promise.resolve();
    this.sending = this.send(this.timeoutMs, true).finally(() => {
      this.sending = null;
    });
    return this.sending;
  }

  /** Zipkin's form of a finished Moleculer span. */
  toZipkin(span: Span): ZipkinSpan {
    const out: ZipkinSpan = {
      traceId: zipkinTraceId(span.traceID),
      id: zipkinSpanId(span.id),
      name: span.name,
      kind: spanKindOf(span),
      timestamp: Math.round((span.startTime ?? Date.now()) * 1000),
      duration: Math.max(1, Math.round((span.duration ?? 0) * 1000)),
      localEndpoint: { serviceName: span.service?.name ?? "moleculer" },
      tags: asStrings(spanTags(span, this.nodeID)),
    };
    if (span.parentID) out.parentId = zipkinSpanId(span.parentID);
    return out;
  }

  private async send(timeoutMs: number, untilEmpty: boolean): Promise<void> {
    const health = this.health as ExportHealth;
    do {
      const batch = this.queue.splice(0, this.batchSize);
      health.queued(this.queue.length);
      try {
        await this.post(batch, timeoutMs);
      } catch (err) {
        // No retries: a collector that is down would get a storm, and the spans would pile up here.
        const lost = batch.length + this.queue.length;
        this.queue.length = 0;
        health.queued(0);
        health.failed(lost, err);
        return;
      }
      health.accepted(batch.length);
    } while (untilEmpty && !this.stopping && this.queue.length > 0);
    if (this.queue.length === 0) health.drained();
  }

  private async post(batch: ZipkinSpan[], timeoutMs: number): Promise<void> {
    const res = await fetch(this.url, {
      method: "POST",
      headers: this.postHeaders,
      body: JSON.stringify(batch),
      signal: AbortSignal.timeout(timeoutMs),
    });
    // Read to the end, so the connection is free for the next batch.
    const text = await res.text();
    if (!res.ok) throw new Error(`HTTP ${res.status} ${text.slice(0, 200)}`);
  }
}
