/**
 * The one configuration module. Every setting has an environment variable, a default and a line of
 * documentation; `loadConfig` reads them once at start and fails fast on a bad value. Services get the
 * result through `configOf(broker)`, never from process.env.
 */
import path from "node:path";
import { ConfigError } from "../errors";
import { HOOK_NAMES } from "../runtime/internals";

type Parser<T> = (raw: string, env: string) => T;

interface Entry<T> {
  env: string;
  default: string;
  doc: string;
  parse: Parser<T>;
}

const str: Parser<string> = (raw) => raw;

const int =
  (min: number, max = Number.MAX_SAFE_INTEGER): Parser<number> =>
  (raw, env) => {
    const value = /^-?\d+$/.test(raw) ? Number(raw) : NaN;
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new ConfigError(`${env} must be an integer between ${min} and ${max}, got "${raw}"`);
    }
    return value;
  };

const bool: Parser<boolean> = (raw, env) => {
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${env} must be true or false, got "${raw}"`);
};

const oneOf =
  <T extends string>(...values: T[]): Parser<T> =>
  (raw, env) => {
    if ((values as string[]).includes(raw)) return raw as T;
    throw new ConfigError(`${env} must be one of ${values.join(", ")}, got "${raw}"`);
  };

const list: Parser<string[]> = (raw) =>
  raw
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);

/** Empty, "all", or a comma list of the hooks into libraries' internals (shared/runtime/internals). */
const hookNames: Parser<string[]> = (raw, env) => {
  const names = list(raw, env);
  const unknown = names.filter((n) => n !== "all" && !(HOOK_NAMES as readonly string[]).includes(n));
  if (unknown.length > 0) {
    throw new ConfigError(
      `${env} must be "all" or names among ${HOOK_NAMES.join(", ")}, got "${unknown.join(", ")}"`,
    );
  }
  return names;
};

/** A share between 0 and 1, written as a decimal (0, 0.05, 1). */
const fraction: Parser<number> = (raw, env) => {
  const value = /^(?:0|1|0?\.\d+|1\.0*)$/.test(raw) ? Number(raw) : NaN;
  if (!(value >= 0 && value <= 1)) {
    throw new ConfigError(`${env} must be a number between 0 and 1, got "${raw}"`);
  }
  return value;
};

/** Empty, or an absolute http(s) URL. */
const optionalUrl: Parser<string> = (raw, env) => {
  if (raw === "") return raw;
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new ConfigError(`${env} must be an http:// or https:// URL, got "${raw}"`);
  }
  return raw;
};

function entry<T>(env: string, def: string, doc: string, parse: Parser<T>): Entry<T> {
  return { env, default: def, doc, parse };
}

/** The schema of the configuration: the table in docs/operations.md is generated from it. */
export const configSchema = {
  nodeEnv: entry(
    "NODE_ENV",
    "development",
    "development, test or production",
    oneOf("development", "test", "production"),
  ),
  port: entry("PORT", "3000", "HTTP port of the gateway (0 picks a free port)", int(0, 65535)),
  host: entry("HOST", "0.0.0.0", "Address the gateway listens on", str),
  httpAcceptors: entry(
    "HTTP_ACCEPTORS",
    "64",
    "Listening sockets on the gateway's port, each accepting one new connection per event-loop turn " +
      "(Linux: SO_REUSEPORT with Node ≥ 22.12, copies of one socket's descriptor before; elsewhere " +
      "always 1; why 64: docs/decisions/0072-gateway-acceptors.md, 0121)",
    int(1, 64),
  ),
  publicUrl: entry(
    "PUBLIC_URL",
    "",
    "Absolute base URL clients use, for links the API returns (empty: relative)",
    str,
  ),
  services: entry(
    "SERVICES",
    "gateway,auth,users,rounds,stores,settings,notifier",
    "Comma-separated services this process runs (one per process in distributed mode)",
    list,
  ),
  metricsPort: entry(
    "METRICS_PORT",
    "0",
    "Port of this process's Prometheus metrics at /metrics (Moleculer's reporter; 0: off)",
    int(0, 65535),
  ),
  healthPort: entry(
    "HEALTH_PORT",
    "0",
    "Port of a small /health and /health/ready server in processes without the gateway (0: none)",
    int(0, 65535),
  ),
  namespace: entry("NAMESPACE", "", "Moleculer namespace: nodes only see nodes of the same namespace", str),
  nodeId: entry("NODE_ID", "", "Moleculer node id (empty: host name and pid)", str),
  transporter: entry(
    "TRANSPORTER",
    "",
    "Moleculer transporter, e.g. nats://127.0.0.1:4222 (empty: one process, no transport)",
    str,
  ),
  cacher: entry(
    "CACHER",
    "Memory",
    "Moleculer cacher: Memory, or redis://host:port for a cache shared by all nodes",
    str,
  ),
  serializer: entry(
    "SERIALIZER",
    "Hybrid",
    "Packet serializer between nodes (all nodes alike): Hybrid (JSON packets, Notepack only for packets with bytes such as upload chunks), Notepack or JSON",
    oneOf("Hybrid", "Notepack", "JSON"),
  ),
  cacheTtlSeconds: entry("CACHE_TTL", "60", "Seconds a cached read lives before it is loaded again", int(1)),
  logLevel: entry(
    "LOG_LEVEL",
    "info",
    "fatal, error, warn, info, debug or trace",
    oneOf("fatal", "error", "warn", "info", "debug", "trace"),
  ),
  logFormat: entry(
    "LOG_FORMAT",
    "short",
    "Console log format: short (human) or json",
    oneOf("short", "json"),
  ),
  dataDir: entry("DATA_DIR", "./data", "Folder of the embedded document store and its demo manifest", str),
  storeInMemory: entry("STORE_IN_MEMORY", "false", "Keep the embedded store in memory only (tests)", bool),
  storeFsync: entry(
    "STORE_FSYNC",
    "false",
    "Answer a write only once it would outlive a power loss: fdatasync per group commit (embedded store), journaled write concern (MongoDB); what it costs: docs/decisions/0080-store-durability.md",
    bool,
  ),
  storeCompactionIntervalSeconds: entry(
    "STORE_COMPACTION_INTERVAL_SECONDS",
    "60",
    "Embedded store: how often each collection's file is checked (first after a random part of it), and compacted once it has doubled since its last compaction and is half dead lines; 0: only at start, and at stop if half dead (why: docs/decisions/0078-nedb-compaction-while-running.md, 0124, 0125)",
    int(0, 86_400),
  ),
  storeCompactionMaxMb: entry(
    "STORE_COMPACTION_MAX_MB",
    "48",
    "Embedded store: a collection's file larger than this is compacted only when loaded at start, not while running nor at stop: a compaction holds the collection's operations for a time that grows with the file (why: docs/decisions/0108-no-compaction-of-large-files-while-running.md, 0109); 0: no limit",
    int(0, 1_000_000),
  ),
  mongoUri: entry(
    "MONGO_URI",
    "",
    "MongoDB connection string; when set, MongoDB replaces the embedded store",
    str,
  ),
  seedOnEmpty: entry(
    "SEED_ON_EMPTY",
    "true",
    "Seed the demo dataset when the embedded store is empty (never in production)",
    bool,
  ),
  jwtSecret: entry(
    "JWT_SECRET",
    "dev-only-secret-change-me-0123456789abcdef",
    "HMAC key that signs access tokens, and from which the refresh tokens' MAC key is derived (required in production, at least 32 characters)",
    str,
  ),
  jwtAlgorithm: entry("JWT_ALGORITHM", "HS256", "Pinned JWT algorithm", oneOf("HS256", "HS384", "HS512")),
  jwtIssuer: entry(
    "JWT_ISSUER",
    "rounds-platform",
    "iss claim of access tokens, checked on verification",
    str,
  ),
  accessTokenTtlSeconds: entry("ACCESS_TOKEN_TTL", "900", "Lifetime of an access token in seconds", int(30)),
  refreshTokenTtlSeconds: entry(
    "REFRESH_TOKEN_TTL",
    "2592000",
    "Lifetime of a refresh token in seconds",
    int(60),
  ),
  refreshGraceSeconds: entry(
    "REFRESH_GRACE_SECONDS",
    "30",
    "Seconds after a refresh in which the previous refresh token still works once (lost responses)",
    int(0, 3600),
  ),
  defaultCurrency: entry(
    "DEFAULT_CURRENCY",
    "RUB",
    "Currency of a round or store without a location country",
    str,
  ),
  requestBodyLimitBytes: entry(
    "REQUEST_BODY_LIMIT",
    "8388608",
    "Largest JSON request body in bytes; a multicast's body may also be as large as MULTICAST_MAX_RECIPIENTS × 80 bytes",
    int(1024),
  ),
  pictureMaxBytes: entry(
    "PICTURE_MAX_BYTES",
    "10485760",
    "Largest main_picture upload in bytes (413 above)",
    int(1024),
  ),
  mediaDir: entry("MEDIA_DIR", "", "Folder of uploaded pictures (empty: DATA_DIR/media)", str),
  uploadsMax: entry(
    "UPLOADS_MAX",
    "32",
    "Store-event uploads one gateway process receives at once; more are answered 503 with Retry-After",
    int(1, 10_000),
  ),
  uploadsMaxPerCaller: entry(
    "UPLOADS_MAX_PER_CALLER",
    "4",
    "Store-event uploads one user may send at once to one gateway process; more are answered 503 with Retry-After",
    int(1, 10_000),
  ),
  idempotencyKeyTtlSeconds: entry(
    "IDEMPOTENCY_KEY_TTL",
    "86400",
    "Seconds a store event's Idempotency-Key is remembered from its first use (a retry gets the first answer; after it, a new event), then deleted; a multicast's key lives as long as its job (docs/decisions/0076-store-event-idempotency-key.md)",
    int(60, 30 * 86_400),
  ),
  uploadTimeoutMs: entry(
    "UPLOAD_TIMEOUT_MS",
    "120000",
    "Longest a store-event upload may take, from its headers to its answer (408 while its body is still arriving, else 504)",
    int(1000, 3_600_000),
  ),
  httpRequestTimeoutMs: entry(
    "HTTP_REQUEST_TIMEOUT_MS",
    "30000",
    "Longest any other request may take, from its headers to its answer (408 while its body is still arriving, else 504)",
    int(1000, 3_600_000),
  ),
  httpHeadersTimeoutMs: entry(
    "HTTP_HEADERS_TIMEOUT_MS",
    "10000",
    "Longest a client may take to send a request's headers; the connection is then answered 408 and closed",
    int(1000, 600_000),
  ),
  httpBodyIdleTimeoutMs: entry(
    "HTTP_BODY_IDLE_TIMEOUT_MS",
    "10000",
    "Longest a request body may go without a byte from the client (not counting time the gateway holds it back); then 408 and the connection is closed",
    int(1000, 600_000),
  ),
  httpKeepAliveTimeoutMs: entry(
    "HTTP_KEEP_ALIVE_TIMEOUT_MS",
    "5000",
    "How long an idle keep-alive connection stays open for its next request",
    int(100, 600_000),
  ),
  multicastMaxRecipients: entry(
    "MULTICAST_MAX_RECIPIENTS",
    "100000",
    "Most user_ids one multicast may name (up to 1,000,000; the list crosses to the notifier in pages, whatever its size)",
    int(1, 1_000_000),
  ),
  pushTransport: entry(
    "PUSH_TRANSPORT",
    "auto",
    "firebase, log (records what would be sent), or auto: firebase when Google credentials or FCM_ENDPOINT are set",
    oneOf("auto", "firebase", "log"),
  ),
  googleCredentials: entry(
    "GOOGLE_APPLICATION_CREDENTIALS",
    "",
    "Service-account JSON file for firebase-admin (the standard Google variable)",
    str,
  ),
  fcmProjectId: entry("FCM_PROJECT_ID", "", "Firebase project id (empty: from the credentials)", str),
  fcmEndpoint: entry(
    "FCM_ENDPOINT",
    "",
    "Send FCM requests to this https://host:port instead of Google's (a local fake in tests)",
    str,
  ),
  fcmInsecureTls: entry(
    "FCM_INSECURE_TLS",
    "false",
    "Accept any certificate from FCM_ENDPOINT (tests only)",
    bool,
  ),
  pushBatchConcurrency: entry(
    "PUSH_BATCH_CONCURRENCY",
    "4",
    "Batches of 500 tokens in flight at once",
    int(1, 64),
  ),
  pushMaxRetries: entry(
    "PUSH_MAX_RETRIES",
    "3",
    "Retries of a token after unavailable/internal/rate errors",
    int(0, 10),
  ),
  pushRetryBaseMs: entry(
    "PUSH_RETRY_BASE_MS",
    "500",
    "First retry delay; doubles each retry",
    int(1, 60_000),
  ),
  notifierAckWaitSeconds: entry(
    "NOTIFIER_ACK_WAIT_SECONDS",
    "15",
    "Seconds without a sign of life (sent every third of this while a job runs) before JetStream hands a job out again",
    int(2, 86_400),
  ),
  notifierMaxDeliveries: entry(
    "NOTIFIER_MAX_DELIVERIES",
    "5",
    "Attempts at a job before it is failed and dead-lettered",
    int(1, 100),
  ),
  notifierJobRetentionHours: entry(
    "NOTIFIER_JOB_RETENTION_HOURS",
    "720",
    "Hours an ended multicast job stays readable at GET /notifications/{job_id} (and its Idempotency-Key answers with it); then it is deleted",
    int(1, 87_600),
  ),
  notifierBatchRetentionHours: entry(
    "NOTIFIER_BATCH_RETENTION_HOURS",
    "24",
    "Hours an ended job keeps its token batches (the device tokens it was sent to, with per-batch counts); at most NOTIFIER_JOB_RETENTION_HOURS",
    int(0, 87_600),
  ),
  notifierRecipientRetentionHours: entry(
    "NOTIFIER_RECIPIENT_RETENTION_HOURS",
    "24",
    "Hours an ended job keeps its list of user ids; at most NOTIFIER_JOB_RETENTION_HOURS",
    int(0, 87_600),
  ),
  outboxRetentionHours: entry(
    "OUTBOX_RETENTION_HOURS",
    "168",
    "Hours a fact may wait unpublished in its document's outbox before the hourly sweep drops it, logging each fact lost; with NATS also the max_age of the JetStream streams (docs/decisions/0077-outbox-and-upload-retention.md)",
    int(1, 87_600),
  ),
  stagedUploadRetentionMinutes: entry(
    "STAGED_UPLOAD_RETENTION_MINUTES",
    "60",
    "Minutes a staged upload's file (an upload a killed process left), or a picture no item names, is kept before the stores sweep removes it; at least twice UPLOAD_TIMEOUT_MS",
    int(1, 10_080),
  ),
  authCacheSeconds: entry(
    "AUTH_CACHE_SECONDS",
    "60",
    "How long the gateway remembers a verified access token (also bounded by its expiry) or an accepted API key, and auth an active user; a removed user is forgotten at once by both (`user.removed`), a revoked key by every gateway (`api-key.revoked`), and a gateway forgets every token and key when it reconnects to the transporter; 0: off",
    int(0, 3600),
  ),
  authCacheEntries: entry(
    "AUTH_CACHE_ENTRIES",
    "100000",
    "Most access tokens and API keys (gateway) and active users (gateway, auth) remembered per process, past which the oldest go: size it to the users active within AUTH_CACHE_SECONDS (about 0.4 KB per token)",
    int(0, 10_000_000),
  ),
  responseCacheMs: entry(
    "RESPONSE_CACHE_MS",
    "1000",
    "Longest time the gateway serves a caller's own round read or friends/payments list again without asking the service (a join, a new friendship or payment drops it at once); a round's answer that is everyone's but its owner's, members' and favouriters' is kept up to CACHE_TTL instead (0: off)",
    int(0, 60_000),
  ),
  responseCacheMb: entry(
    "RESPONSE_CACHE_MB",
    "128",
    "Most megabytes of answers one gateway keeps (the oldest rounds' go first): size it to the rounds read within CACHE_TTL times their answers (a round with 50 members answers about 12 KB)",
    int(1, 65_536),
  ),
  rateLimits: entry(
    "RATE_LIMITS",
    "",
    "Requests per minute per caller, by action: e.g. rounds.join=60,*=1200 (empty: no limits)",
    str,
  ),
  trustProxy: entry(
    "TRUST_PROXY",
    "false",
    "Take the client address from X-Forwarded-For (behind a proxy that sets it)",
    bool,
  ),
  shutdownTimeoutMs: entry(
    "SHUTDOWN_TIMEOUT_MS",
    "10000",
    "On SIGTERM or SIGINT, how long a process lets the work in flight (requests, uploads, push batches) finish",
    int(100, 600_000),
  ),
  requestTimeoutMs: entry(
    "REQUEST_TIMEOUT_MS",
    "10000",
    "Timeout of one action call in milliseconds",
    int(100),
  ),
  tracingEndpoint: entry(
    "TRACING_ENDPOINT",
    "",
    "Full URL of a Zipkin v2 spans endpoint (Zipkin, Jaeger, Tempo: e.g. http://jaeger:9411/api/v2/spans) that receives a span per request, action call, event and fact handled (empty: tracing off)",
    optionalUrl,
  ),
  tracingSampleRate: entry(
    "TRACING_SAMPLE_RATE",
    "0.1",
    "Share of requests traced, decided at the gateway per request and followed by every process the request reaches (a request answered 5xx still sends the gateway's span; why 0.1: docs/decisions/0083-trace-sampling.md)",
    fraction,
  ),
  tracingIntervalMs: entry(
    "TRACING_INTERVAL_MS",
    "5000",
    "How often finished spans are sent to TRACING_ENDPOINT; a batch not accepted within this long is dropped",
    int(100, 600_000),
  ),
  tracingQueueSize: entry(
    "TRACING_QUEUE_SIZE",
    "10000",
    "Most finished spans a process holds for TRACING_ENDPOINT; newer ones are dropped (and counted) while it is full",
    int(100, 1_000_000),
  ),
  internalsHooksOff: entry(
    "INTERNALS_HOOKS_OFF",
    "",
    "Hooks into libraries' internals to leave off, each library then working its own way: all, or a comma list of hook names (docs/architecture.md lists them)",
    hookNames,
  ),
};

type Schema = typeof configSchema;
export type Config = Readonly<{ [K in keyof Schema]: Schema[K] extends Entry<infer T> ? T : never }>;

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const out: Record<string, unknown> = {};
  for (const [key, e] of Object.entries(configSchema) as [string, Entry<unknown>][]) {
    const raw = env[e.env];
    out[key] = e.parse(raw === undefined || raw === "" ? e.default : raw, e.env);
  }
  const config = out as Config;
  if (config.nodeEnv === "production" && config.jwtSecret === configSchema.jwtSecret.default) {
    throw new ConfigError("JWT_SECRET must be set in production");
  }
  if (config.jwtSecret.length < 32) throw new ConfigError("JWT_SECRET must have at least 32 characters");
  // A job is deleted only after what hangs off it (services/notifier/retention.ts).
  for (const [key, env] of [
    ["notifierBatchRetentionHours", "NOTIFIER_BATCH_RETENTION_HOURS"],
    ["notifierRecipientRetentionHours", "NOTIFIER_RECIPIENT_RETENTION_HOURS"],
  ] as const) {
    if (config[key] > config.notifierJobRetentionHours) {
      throw new ConfigError(
        `${env} must not exceed NOTIFIER_JOB_RETENTION_HOURS (${config.notifierJobRetentionHours})`,
      );
    }
  }
  // An upload still being received must never be swept (services/stores/media-sweep.ts).
  if (config.stagedUploadRetentionMinutes * 60_000 < 2 * config.uploadTimeoutMs) {
    throw new ConfigError(
      `STAGED_UPLOAD_RETENTION_MINUTES must be at least twice UPLOAD_TIMEOUT_MS (${config.uploadTimeoutMs} ms)`,
    );
  }
  return Object.freeze({ ...config, dataDir: path.resolve(config.dataDir) });
}

/** True when this process runs without a transporter: everything in one broker. */
export const isEmbedded = (config: Config): boolean => config.transporter === "";

/** One setting alone, for code that runs without a loaded configuration (a store opened by a test). */
export function loadSetting<K extends keyof Schema>(
  key: K,
  env: Record<string, string | undefined> = process.env,
): Config[K] {
  const e = configSchema[key] as Entry<Config[K]>;
  const raw = env[e.env];
  return e.parse(raw === undefined || raw === "" ? e.default : raw, e.env);
}

const byBroker = new WeakMap<object, Config>();

/** Binds a configuration to a broker so that its services read the same one. */
export function bindConfig(broker: object, config: Config): void {
  byBroker.set(broker, config);
}

export function configOf(broker: object): Config {
  const config = byBroker.get(broker);
  if (!config) throw new ConfigError("No configuration bound to this broker: create it with createBroker()");
  return config;
}
