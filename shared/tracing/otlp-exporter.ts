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
import { ServiceBroker, TracerExporters, type Span, type Tracer } from "moleculer";
import { w3cTraceId, zipkinSpanId } from "./ids";
import { ExportHealth, waitAtMost } from "./export-health";
import { endpointOf, exporterGauges, spanError, spanKindOf, spanTags } from "./span-fields";

export interface OtlpExporterOptions {
  /** Full URL of the OTLP/HTTP traces endpoint, e.g. http://otel-collector:4318/v1/traces (user:password@ → Basic auth). */
  endpoint: string;
  intervalMs: number;
  maxQueue: number;
  /** Spans per request (default 1,000). */
  batchSize?: number;
  /** How long one batch may take, retries included (default: intervalMs). */
  timeoutMs?: number;
  /** How long stopping may spend sending what is left (default 2 s). */
  stopTimeoutMs?: number;
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

export class OtlpSpanExporter extends TracerExporters.Base {
  /** Spans handed to the processor and not yet to its exporter: never more than maxQueue. */
  queued = 0;

  private readonly url: string;
  private readonly headers: Record<string, string>;
  private readonly intervalMs: number;
  private readonly maxQueue: number;
  private readonly batchSize: number;
  private readonly timeoutMs: number;
  private readonly stopTimeoutMs: number;
  private readonly target: SpanExporter | undefined;
  private processor: BatchSpanProcessor | null = null;
  private nodeID = "";
  /** One resource per service name (service.name, service.instance.id: the node). */
  private readonly resources = new Map<string, Resource>();
  /** Counts, warnings and metrics (from init on). */
  private health: ExportHealth | null = null;

  constructor(opts: OtlpExporterOptions) {
    super({});
    const { url, headers } = endpointOf(opts.endpoint);
    this.url = url;
    this.headers = headers;
    this.intervalMs = opts.intervalMs;
    this.maxQueue = opts.maxQueue;
    this.batchSize = Math.min(opts.batchSize ?? 1000, opts.maxQueue);
    this.timeoutMs = opts.timeoutMs ?? opts.intervalMs;
    this.stopTimeoutMs = opts.stopTimeoutMs ?? 2000;
    this.target = opts.spanExporter;
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
