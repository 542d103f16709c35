/**
 * Sends finished spans over OTLP/HTTP (JSON) to an OpenTelemetry collector, or any backend that takes
 * OTLP (Jaeger, Tempo, Honeycomb...), with OpenTelemetry's own exporter and batch span processor: the
 * queue, the batches, the time-outs, the retries and the dropping are theirs (decision 0143).
 *
 * A Moleculer span becomes a small ReadableSpan as it finishes (its context is let go at once) and is
 * handed to the processor, whose queue holds at most `maxQueue` of them; a span finished while it is
 * full is dropped and counted. The processor sends batches of `batchSize` every `intervalMs` (at once
 * when a batch is full), one at a time; the exporter retries a batch the collector could not take
 * (refused connection, 429, 502-504) with back-off until `timeoutMs` has passed, then the batch is
 * dropped. As the Zipkin exporter does, this one warns once per outage and says once when spans get
 * through again, shows `tracing_spans_*` with METRICS_PORT, and stops within `stopTimeoutMs`.
 */
import { SpanKind, SpanStatusCode, TraceFlags, type HrTime, type SpanContext } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes, type Resource } from "@opentelemetry/resources";
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { ServiceBroker, type Span, type Tracer } from "moleculer";
import { w3cTraceId, zipkinSpanId } from "./ids";
import { BoundedExporter, waitAtMost, type BoundedExporterOptions, type ExportHealth } from "./export-health";
import { spanError, spanKindOf, spanTags } from "./span-fields";

/** A batch's time-out (`timeoutMs`) includes the exporter's retries. */
export interface OtlpExporterOptions extends BoundedExporterOptions {
  /** Where batches go (default: OpenTelemetry's OTLP/HTTP exporter to `endpoint`); tests pass their own. */
  spanExporter?: SpanExporter;
}

/** Only the exporter's result codes this file reads (@opentelemetry/core's ExportResultCode). */
const SUCCESS = 0;

const SCOPE = { name: "moleculer", version: ServiceBroker.MOLECULER_VERSION };

/** Epoch milliseconds (with a fraction) as OpenTelemetry's [seconds, nanoseconds]. */
function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.round((ms - seconds * 1000) * 1e6);
  return nanos >= 1e9 ? [seconds + 1, nanos - 1e9] : [seconds, nanos];
}

/** A finished span as OpenTelemetry's exporters read it; holds nothing of the Moleculer span. */
class ExportedSpan implements ReadableSpan {
  readonly links = [];
  readonly events = [];
  readonly ended = true;
  readonly instrumentationScope = SCOPE;
  readonly droppedAttributesCount = 0;
  readonly droppedEventsCount = 0;
  readonly droppedLinksCount = 0;

  constructor(
    readonly name: string,
    readonly kind: SpanKind,
    private readonly context: SpanContext,
    readonly parentSpanContext: SpanContext | undefined,
    readonly startTime: HrTime,
    readonly endTime: HrTime,
    readonly duration: HrTime,
    readonly status: { code: SpanStatusCode; message?: string },
    readonly attributes: Record<string, string | number | boolean>,
    readonly resource: Resource,
  ) {}

  spanContext(): SpanContext {
    return this.context;
  }
}

export class OtlpSpanExporter extends BoundedExporter {
  /** Spans handed to the processor and not yet to its exporter: never more than maxQueue. */
  queued = 0;

  private readonly target: SpanExporter | undefined;
  private processor: BatchSpanProcessor | null = null;
  /** One resource per service name (service.name, service.instance.id: the node). */
  private readonly resources = new Map<string, Resource>();

  constructor(opts: OtlpExporterOptions) {
    // A batch is never larger than the queue it is taken from.
    super({ ...opts, batchSize: Math.min(opts.batchSize ?? 1000, opts.maxQueue) });
    this.target = opts.spanExporter;
  }

  override init(tracer: Tracer): void {
    super.init(tracer);
    const target =
      this.target ??
      new OTLPTraceExporter({
        url: this.url,
        headers: this.headers,
        timeoutMillis: this.timeoutMs,
        // Batches go one at a time, but flushing (at stop) sends the whole queue at once; beyond this
        // (the queue's worth) a batch fails at once. What is in flight is spans the queue held anyway.
        concurrencyLimit: Math.ceil(this.maxQueue / this.batchSize) + 1,
      });
    this.processor = new BatchSpanProcessor(this.counting(target), {
      maxQueueSize: this.maxQueue,
      maxExportBatchSize: this.batchSize,
      scheduledDelayMillis: this.intervalMs,
      exportTimeoutMillis: this.timeoutMs,
    });
  }

  override spanFinished(span: Span): void {
    if (!this.processor || !this.health) return;
    // The processor's own bound is the same; counted here, where the drop can be seen.
    if (this.queued >= this.maxQueue) return this.health.full();
    this.queued++;
    this.health.queued(this.queued);
    this.processor.onEnd(this.toReadable(span));
  }

  /** Sends what waits now (tests; stopping does it too). */
  async flush(): Promise<void> {
    await this.processor?.forceFlush().catch(() => undefined);
  }

  async stop(): Promise<void> {
    const processor = this.processor;
    if (!processor) return;
    // What a stopping process finished last is sent once, within stopTimeoutMs; what does not fit is lost.
    await waitAtMost(
      processor.shutdown().catch(() => undefined),
      this.stopTimeoutMs,
    );
  }

  /** OpenTelemetry's form of a finished Moleculer span. */
  toReadable(span: Span): ExportedSpan {
    const traceId = w3cTraceId(span.traceID);
    const start = span.startTime ?? Date.now();
    const durationMs = Math.max(0.001, span.duration ?? 0);
    const failure = spanError(span);
    const serviceName = span.service?.name ?? "moleculer";
    return new ExportedSpan(
      span.name,
      spanKindOf(span) === "CONSUMER" ? SpanKind.CONSUMER : SpanKind.SERVER,
      { traceId, spanId: zipkinSpanId(span.id), traceFlags: TraceFlags.SAMPLED },
      span.parentID
        ? { traceId, spanId: zipkinSpanId(span.parentID), traceFlags: TraceFlags.SAMPLED }
        : undefined,
      hrTime(start),
      hrTime(start + durationMs),
      hrTime(durationMs),
      failure ? { code: SpanStatusCode.ERROR, message: failure.type } : { code: SpanStatusCode.UNSET },
      spanTags(span, this.nodeID),
      this.resourceOf(serviceName),
    );
  }

  private resourceOf(serviceName: string): Resource {
    let resource = this.resources.get(serviceName);
    if (!resource) {
      resource = resourceFromAttributes({
        "service.name": serviceName,
        "service.instance.id": this.nodeID,
      });
      this.resources.set(serviceName, resource);
    }
    return resource;
  }

  /** `target`, counting what it is given, accepts and fails, and saying so once per outage. */
  private counting(target: SpanExporter): SpanExporter {
    return {
      export: (spans, done) => {
        const health = this.health as ExportHealth;
        this.queued = Math.max(0, this.queued - spans.length);
        health.queued(this.queued);
        target.export(spans, (result) => {
          if (result.code === SUCCESS) {
            health.accepted(spans.length);
            if (this.queued === 0) health.drained();
          } else {
            health.failed(spans.length, result.error ?? "export failed");
          }
          done(result);
        });
      },
      shutdown: () => target.shutdown(),
      forceFlush: () => target.forceFlush?.() ?? Promise.resolve(),
    };
  }
}
