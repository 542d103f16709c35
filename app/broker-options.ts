/**
 * Broker options, derived from the validated configuration (shared/config); only the composition root
 * (./broker) uses them. The same options serve the embedded mode (no transporter, memory cacher, one
 * process) and the distributed one (NATS, Redis, one service per process).
 */
import { jsonLine } from "../shared/runtime/json-log";
import os from "node:os";
import type { BrokerOptions, Middleware } from "moleculer";
import { Middleware as ChannelsMiddleware } from "@moleculer/channels";
import { isNats, type Config } from "../shared/config";
import { ErrorType } from "../shared/errors";
import { MetricsMiddleware } from "../shared/runtime/metrics";
import { RequestLogMiddleware } from "../shared/runtime/request-log";
import { HybridSerializer } from "../shared/runtime/serializer";
import { AjvValidator } from "../shared/validation";
import { tracingOptions } from "../shared/tracing";
import { redisClientOptions } from "../shared/runtime/redis-options";
import { natsConnectionOptions } from "../shared/runtime/nats-options";
import { ReconnectingNatsTransporter } from "../shared/runtime/nats-transporter";
import { CallsAcrossLossMiddleware } from "../shared/runtime/nats-calls-across-loss";
import { ReconnectAwareDiscoverer } from "../shared/runtime/nats-discoverer";
import { ACK_WAIT_SECONDS, MAX_DELIVERIES } from "../services/notifier/delivery-bounds";
import { OUTBOX_RETENTION_MS } from "../shared/outbox/expiry";

/**
 * Durable messaging rides on NATS JetStream when the transporter is NATS: the notifier's jobs, and the
 * facts the outboxes publish (shared/runtime/channels). Without it (embedded), there is no channel
 * middleware: the notifier uses its store-backed queue, and a fact goes straight to its local consumers.
 */
function channelsMiddleware(config: Config): Middleware[] {
  if (!isNats(config)) return [];
  return [
    ChannelsMiddleware({
      adapter: {
        type: "NATS",
        options: {
          nats: {
            // The same servers, credentials and TLS as the transporter (shared/runtime/nats-options).
            connectionOptions: natsConnectionOptions(config),
            // A job must finish (and be acknowledged) within this, or JetStream hands it out again; a
            // notifier that died mid-job is thus replaced after at most this long.
            consumerOptions: { config: { ack_wait: ACK_WAIT_SECONDS * 1e9 } },
            // Every stream (facts, jobs, dead letters) keeps a message OUTBOX_RETENTION_MS, as long as a
            // fact may wait in its outbox: with the default "limits" retention a stream otherwise keeps
            // every message, acknowledged or not, for ever (docs/decisions/0041-durable-facts.md).
            streamConfig: { max_age: STREAM_MAX_AGE_NANOS },
          },
          maxInFlight: 2,
          // One more than the notifier's own bound, so the attempt that marks the job failed is delivered.
          maxRetries: MAX_DELIVERIES + 1,
          deadLettering: { enabled: true, queueName: "DEAD_LETTER" },
        },
      },
      context: false,
      // The package's typings demand every adapter's options at once; these are the NATS ones.
    } as never) as unknown as Middleware,
  ];
}

/** JetStream's `max_age` (nanoseconds) of the streams the channels middleware creates. */
export const STREAM_MAX_AGE_NANOS = OUTBOX_RETENTION_MS * 1e6;

/**
 * Failures that are not the node's own: a call rejected across a NATS outage (the transport), a store
 * that cannot be written (shared by every node of the service).
 */
const NOT_THE_NODE = new Set<string>(["REQUEST_REJECTED", ErrorType.STORE_WRITE_FAILED]);

/** Whether a failed call counts against its node's circuit breaker: a server-side error of the node's own. */
export function countsAgainstNode(err: unknown): boolean {
  const e = err as { code?: number; type?: string } | null;
  if (!e) return false;
  return (e.code ?? 500) >= 500 && !NOT_THE_NODE.has(e.type ?? "");
}

/**
 * A node's id, `<who>.<host>-<pid>`, never a setting: NATS permits a user to take calls only on its own
 * nodes' subjects (`MOL-<ns>.REQ.<service>.>`) and grants each caller the nodes it calls
 * (shared/ops/nats-auth.ts), which needs the user in the id's first token, and host and pid make it
 * unique without anyone choosing. `<who>` is the NATS user (a service's, or `ops` for the CLI), else the
 * one service the process runs; a process of several services without a user is `<host>-<pid>`, as
 * Moleculer's own default.
 */
export function nodeIdOf(config: Pick<Config, "natsUser" | "services">): string {
  const host = `${os
    .hostname()
    .toLowerCase()
    .replace(/[.*>\s]/g, "-")}-${process.pid}`;
  const who = config.natsUser || (config.services.length === 1 ? config.services[0] : "");
  return who ? `${who}.${host}` : host;
}

/** Ids given to this process's brokers: a second broker of a process (tests, the CLI's) gets `-2`, … */
const takenIds = new Map<string, number>();

function uniqueInProcess(id: string): string {
  const n = (takenIds.get(id) ?? 0) + 1;
  takenIds.set(id, n);
  return n === 1 ? id : `${id}-${n}`;
}

export function brokerOptions(config: Config): BrokerOptions {
  // Moleculer's NATS transporter, told of nats.js 2.x reconnects (shared/runtime/nats-transporter).
  const transporter = isNats(config)
    ? new ReconnectingNatsTransporter({ ...natsConnectionOptions(config) })
    : undefined;
  return {
    middlewares: [
      RequestLogMiddleware(),
      ...channelsMiddleware(config),
      // Over NATS: a call whose request or answer a reconnect lost is rejected (retryable), not left to
      // its timeout (shared/runtime/nats-calls-across-loss).
      ...(transporter ? [CallsAcrossLossMiddleware(transporter)] : []),
      // The project's own metrics beside Moleculer's (shared/runtime/metric-names), with METRICS_PORT.
      MetricsMiddleware(),
    ],
    metadata: {},
    namespace: config.namespace,
    nodeID: uniqueInProcess(nodeIdOf(config)),
    transporter,
    cacher:
      config.cacher === "Memory"
        ? { type: "Memory", options: { ttl: config.cacheTtlSeconds } }
        : {
            type: "Redis",
            options: {
              ttl: config.cacheTtlSeconds,
              redis: redisClientOptions(config.cacher, config),
              prefix: `${config.namespace || "rounds"}-cache`,
            },
          },
    // Hybrid (shared/runtime/serializer): a packet without bytes travels as JSON text (V8's JSON is
    // faster than Notepack's msgpack in JavaScript), one with bytes (a picture's chunks streamed from the
    // gateway to the stores service) as Notepack, which keeps them bytes where JSON would inflate each
    // chunk into an array of numbers. Not a setting: every node must speak the same one, and no other
    // serves both kinds of packet as well.
    serializer: new HybridSerializer(),
    validator: new AjvValidator(),
    logger: {
      type: "Console",
      options: {
        level: config.logLevel,
        formatter: config.logFormat === "json" ? jsonLine : "short",
        colors: config.logFormat !== "json",
      },
    },
    // A call that takes longer than this is answered 504 by the gateway rather than hanging the client.
    requestTimeout: config.requestTimeoutMs,
    // Reads are retried on another node when one dies mid-call; joins are safe to retry (idempotent).
    retryPolicy: {
      enabled: true,
      retries: 2,
      delay: 100,
      maxDelay: 1000,
      factor: 2,
      check: (err) => !!(err as { retryable?: boolean }).retryable,
    },
    registry: {
      strategy: "RoundRobin",
      preferLocal: true,
      // Over NATS: a peer is not dropped for the beats this node missed while its own connection was
      // down (shared/runtime/nats-discoverer).
      ...(transporter ? { discoverer: new ReconnectAwareDiscoverer(transporter) } : {}),
    },
    // How often a starting service looks for the services it depends on (a local registry lookup, cheap);
    // the default second makes every start-up wait a second for nothing.
    dependencyInterval: 100,
    // NATS does not tell the other nodes when a process dies (kill -9, a lost host): they learn it from
    // missing heartbeats, and until then keep routing calls to it; once it is dropped, Moleculer rejects
    // its pending calls as retryable and they go to another instance. Moleculer beats every 0.5–1.5 s with these settings and checks every
    // `heartbeatTimeout` seconds for a node silent longer than that (whole seconds), so a dead node is out
    // of rotation after 3–5 s. A beat is one small message per node per second; two silent seconds is
    // well above the event-loop pauses measured under load here.
    heartbeatInterval: 1,
    heartbeatTimeout: 2,
    // A node whose calls keep failing (half of at least 20 in a minute, server-side errors only) is taken
    // out of rotation for 10 s, then tried again: a sick rounds instance stops eating requests while a
    // healthy one serves them. Client errors (4xx: validation, 404, 409) never count, nor does a store
    // that cannot be written (507): every node of a service writes to the same store, so skipping the
    // node helps no one and would turn the 507 that says why into a bare 503. Nor do calls that never
    // reached the node or lost their answer on the way: a NATS outage says nothing of its health
    // (docs/decisions/0042-nats-outage.md).
    circuitBreaker: {
      enabled: true,
      threshold: 0.5,
      minRequestCount: 20,
      windowTime: 60,
      halfOpenTime: 10_000,
      check: countsAgainstNode,
    },
    // At most 100 calls of one action run at once on a node and 1,000 wait; beyond that the caller gets
    // 503 at once instead of piling work onto a saturated node (one slow action cannot starve the rest).
    bulkhead: { enabled: true, concurrency: 100, maxQueueSize: 1000 },
    // A stopping process waits this long for the calls it serves or makes to finish (shared/runtime/shutdown).
    tracking: { enabled: true, shutdownTimeout: config.shutdownTimeoutMs },
    // Signals are handled by bin/start (bounded stop, exit code); a broker never installs its own.
    skipProcessEventRegistration: true,
    // Prometheus scrapes each process on METRICS_PORT (requests, latencies, errors per action, event loop,
    // memory; the dashboard and alerts of deploy/observability read them). Process metrics are collected
    // whatever NODE_ENV says (Moleculer skips them under "test"), so the tests see what operators see.
    metrics:
      config.metricsPort > 0
        ? {
            enabled: true,
            collectProcessMetrics: true,
            // On HOST, as the gateway (Moleculer's reporter would take every interface).
            reporter: [
              {
                type: "Prometheus",
                options: { port: config.metricsPort, host: config.host, path: "/metrics" },
              },
            ],
          }
        : { enabled: false },
    // One trace per request across processes, sent to TRACING_ENDPOINT (off when empty): shared/tracing.
    tracing: tracingOptions(config),
  };
}
