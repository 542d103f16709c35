/**
 * The one configuration module. Every setting has an environment variable, a default and a line of
 * documentation; `loadConfig` reads them once at start and fails fast on a bad value. Services get the
 * result through `configOf(broker)`, never from process.env.
 */
import fs from "node:fs";
import { isIP } from "node:net";
import path from "node:path";
import { signingKeysOf, type SigningKey } from "../auth/jwk";
import { ConfigError } from "../errors";
import { checkProductionKeys, checkProductionSecrets, checkSecretLengths } from "./key-checks";
import { HOOK_NAMES, RETIRED_HOOKS } from "../runtime/internals";

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

/** PEM text, or the path of a file holding it (a mounted Secret); a literal `\n` written for each newline is read as one. */
const privateKeys: Parser<SigningKey[]> = (raw, env) => {
  if (raw === "") return [];
  let text = raw;
  if (!raw.trimStart().startsWith("-----BEGIN")) {
    try {
      text = fs.readFileSync(raw, "utf8");
    } catch (err) {
      throw new ConfigError(`${env} is neither PEM text nor a readable file (${(err as Error).message})`);
    }
  }
  return signingKeysOf(text.includes("\n") ? text : text.replace(/\\n/g, "\n"), env);
};

/**
 * Empty, "all", or a comma list of the hooks into libraries' internals (shared/runtime/internals). A
 * retired hook's name is left out (retiredSettingsIn warns of it).
 */
const hookNames: Parser<string[]> = (raw, env) => {
  const names = list(raw, env).filter((n) => !(n in RETIRED_HOOKS));
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

/** A comma list of IP addresses and CIDRs (10.0.0.0/8, fd00::/8). */
const addressList: Parser<string[]> = (raw, env) => {
  const entries = list(raw, env);
  for (const entry of entries) {
    const [address, bits, extra] = entry.split("/");
    const family = isIP(address);
    const max = family === 4 ? 32 : 128;
    if (
      family === 0 ||
      extra !== undefined ||
      (bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= max))
    ) {
      throw new ConfigError(`${env} must list IP addresses or CIDRs (e.g. 10.0.0.0/8), got "${entry}"`);
    }
  }
  return entries;
};

function entry<T>(env: string, def: string, doc: string, parse: Parser<T>): Entry<T> {
  return { env, default: def, doc, parse };
}

/** RATE_LIMITS' default: the writes, per user (per API key for a multicast), bounded but never met honestly. */
export const DEFAULT_RATE_LIMITS =
  "rounds.join=120,auth.refresh=60,stores.createEvent=60,notifier.sendMulticast=600";

/** The schema of the configuration: the table in docs/operations.md is generated from it. */
export const configSchema = {
  nodeEnv: entry(
    "NODE_ENV",
    "development",
    "development, test or production",
    oneOf("development", "test", "production"),
  ),
  port: entry("PORT", "3000", "The gateway's HTTP port (0: a free one)", int(0, 65535)),
  host: entry("HOST", "127.0.0.1", "Listening address (gateway, health, metrics)", str),
  publicUrl: entry("PUBLIC_URL", "", "Base URL of links (empty: relative)", str),
  services: entry(
    "SERVICES",
    "gateway,auth,users,rounds,stores,settings,notifier",
    "Services this process runs, comma-separated",
    list,
  ),
  metricsPort: entry("METRICS_PORT", "0", "Port of Prometheus /metrics (0: off)", int(0, 65535)),
  healthPort: entry("HEALTH_PORT", "0", "Port of /health without the gateway (0: none)", int(0, 65535)),
  namespace: entry("NAMESPACE", "", "Moleculer namespace: nodes see only their own", str),
  transporter: entry("TRANSPORTER", "", "NATS URLs, nats:// or tls:// (empty: none)", str),
  natsUser: entry("NATS_USER", "", "This process's NATS user (empty: none)", str),
  natsPassword: entry("NATS_PASSWORD", "", "Password of NATS_USER (a Secret)", str),
  natsTlsDir: entry("NATS_TLS_DIR", "", "Folder of NATS TLS files: ca.crt, and tls.crt with tls.key", str),
  cacher: entry("CACHER", "Memory", "Memory, or redis://host:port", str),
  redisUser: entry("REDIS_USER", "", "This process's Redis user (empty: default)", str),
  redisPassword: entry("REDIS_PASSWORD", "", "Password of REDIS_USER (a Secret)", str),
  cacheTtlSeconds: entry("CACHE_TTL", "60", "Seconds a cached read lives", int(1)),
  logLevel: entry(
    "LOG_LEVEL",
    "info",
    "fatal, error, warn, info, debug or trace",
    oneOf("fatal", "error", "warn", "info", "debug", "trace"),
  ),
  logFormat: entry(
    "LOG_FORMAT",
    "short",
    "short (for people) or json (for collectors)",
    oneOf("short", "json"),
  ),
  accessLogSample: entry(
    "ACCESS_LOG_SAMPLE",
    "0",
    "Share of requests the gateway logs a line of (0: off)",
    fraction,
  ),
  dataDir: entry("DATA_DIR", "./data", "Folder of the embedded store and keys", str),
  mongoUri: entry("MONGO_URI", "", "MongoDB URL (empty: the embedded store)", str),
  mongoUser: entry("MONGO_USER", "", "This process's MongoDB user (empty: none)", str),
  mongoPassword: entry("MONGO_PASSWORD", "", "Password of MONGO_USER (a Secret)", str),
  jwtPrivateKeys: entry("JWT_PRIVATE_KEYS", "", "Auth only: access-token signing keys (PEM)", privateKeys),
  refreshTokenSecrets: entry("REFRESH_TOKEN_SECRETS", "", "Auth only: refresh-token MAC secrets", list),
  jwtLegacySecrets: entry("JWT_LEGACY_SECRETS", "", "Auth only: former JWT_SECRET values (upgrade)", list),
  accessTokenTtlSeconds: entry("ACCESS_TOKEN_TTL", "900", "Seconds an access token lives", int(30)),
  refreshTokenTtlSeconds: entry("REFRESH_TOKEN_TTL", "2592000", "Seconds a refresh token lives", int(60)),
  pictureMaxBytes: entry("PICTURE_MAX_BYTES", "10485760", "Largest main_picture in bytes", int(1024)),
  httpKeepAliveTimeoutMs: entry(
    "HTTP_KEEP_ALIVE_TIMEOUT_MS",
    "5000",
    "How long an idle keep-alive connection stays",
    int(100, 600_000),
  ),
  multicastMaxRecipients: entry(
    "MULTICAST_MAX_RECIPIENTS",
    "100000",
    "Most user_ids in one multicast",
    int(1, 1_000_000),
  ),
  pushTransport: entry("PUSH_TRANSPORT", "auto", "firebase, log, or auto", oneOf("auto", "firebase", "log")),
  googleCredentials: entry(
    "GOOGLE_APPLICATION_CREDENTIALS",
    "",
    "Service-account JSON file for firebase-admin",
    str,
  ),
  fcmEndpoint: entry("FCM_ENDPOINT", "", "FCM address instead of Google's; http:// in tests", optionalUrl),
  authCacheSeconds: entry(
    "AUTH_CACHE_SECONDS",
    "60",
    "Seconds a checked token or key is trusted",
    int(0, 3600),
  ),
  responseCacheMs: entry(
    "RESPONSE_CACHE_MS",
    "1000",
    "Microcache of a caller's own reads (ms)",
    int(0, 60_000),
  ),
  rateLimits: entry("RATE_LIMITS", DEFAULT_RATE_LIMITS, "Requests a minute per caller, by action", str),
  addressRateLimit: entry(
    "ADDRESS_RATE_LIMIT",
    "60000",
    "Requests a minute per client address (0: off)",
    int(0),
  ),
  trustedProxies: entry("TRUSTED_PROXIES", "", "Proxies whose X-Forwarded-For counts", addressList),
  shutdownTimeoutMs: entry(
    "SHUTDOWN_TIMEOUT_MS",
    "10000",
    "Time the work in flight gets on SIGTERM",
    int(100, 600_000),
  ),
  // 0: one process has nothing routing by its readiness. Behind a load balancer the delay lets it see the
  // 503 and route new connections elsewhere before this one stops accepting (docs/operations.md).
  shutdownDelayMs: entry(
    "SHUTDOWN_DELAY_MS",
    "0",
    "Ms served not ready on SIGTERM (> probe period×threshold)",
    int(0, 600_000),
  ),
  requestTimeoutMs: entry("REQUEST_TIMEOUT_MS", "10000", "Timeout of one action call in ms", int(100)),
  tracingEndpoint: entry(
    "TRACING_ENDPOINT",
    "",
    "Zipkin v2 URL, or OTLP/HTTP's ending /v1/traces (empty: off)",
    optionalUrl,
  ),
  tracingSampleRate: entry(
    "TRACING_SAMPLE_RATE",
    "0.1",
    "Share traced of requests without a caller's decision",
    fraction,
  ),
  internalsHooksOff: entry("INTERNALS_HOOKS_OFF", "", "Hooks left off: all, or names", hookNames),
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
  // Three file settings became one folder; ignoring them would change whom the process trusts.
  const oldTls = ["NATS_TLS_CA", "NATS_TLS_CERT", "NATS_TLS_KEY"].filter((name) => env[name]);
  if (oldTls.length > 0) {
    throw new ConfigError(
      `${oldTls.join(", ")} replaced by NATS_TLS_DIR: a folder holding ca.crt, and tls.crt with tls.key for a client certificate`,
    );
  }
  // TRUST_PROXY=true trusted X-Forwarded-For from any peer; the new setting names the proxies.
  if (env.TRUST_PROXY !== undefined && /^(1|true|yes|on)$/i.test(env.TRUST_PROXY)) {
    throw new ConfigError(
      "TRUST_PROXY is replaced by TRUSTED_PROXIES: list the addresses or CIDRs of the proxies that set X-Forwarded-For",
    );
  }
  checkTokenKeys(config, env);
  checkCredentials(config);
  return Object.freeze({ ...config, dataDir: path.resolve(config.dataDir) });
}

/**
 * Settings that tuned one mechanism each and are now a named constant beside it (with why that value),
 * or a test switch another way replaced: what holds now, so that an operator who still sets one learns
 * at start that it is ignored.
 */
const NOW_CONSTANTS: Readonly<Record<string, string>> = {
  SERIALIZER: "every node speaks the Hybrid serializer (shared/runtime/serializer.ts)",
  FCM_INSECURE_TLS: "an https:// FCM_ENDPOINT is always checked; a local fake is given as http://",
  PUSH_MAX_RETRIES: "a token is retried 3 times (services/notifier/deliver.ts)",
  PUSH_RETRY_BASE_MS: "retries wait about 0.5, 1 and 2 s (services/notifier/deliver.ts)",
  NOTIFIER_MAX_DELIVERIES: "a job is attempted 5 times (services/notifier/delivery-bounds.ts)",
  NOTIFIER_JOB_RETENTION_HOURS: "an ended job is kept 30 days (services/notifier/retention.ts)",
  NOTIFIER_BATCH_RETENTION_HOURS: "an ended job's batches are kept a day (services/notifier/retention.ts)",
  NOTIFIER_RECIPIENT_RETENTION_HOURS:
    "an ended job's user ids are kept a day (services/notifier/retention.ts)",
  OUTBOX_RETENTION_HOURS: "an unpublished fact is kept 7 days (shared/outbox/expiry.ts)",
  STAGED_UPLOAD_RETENTION_MINUTES: "left-over uploads go after an hour (services/stores/media-sweep.ts)",
  IDEMPOTENCY_KEY_TTL: "a store event's key is kept 24 h (services/stores/event-keys.repository.ts)",
  REFRESH_GRACE_SECONDS: "a retired refresh token's one retry is open 30 s (services/auth/refresh-family.ts)",
  JWT_ISSUER: 'access tokens are issued by "rounds-platform" (shared/auth/access-token.ts)',
  FCM_PROJECT_ID: "pushes go to the Google credentials' own project (services/notifier/transport.ts)",
  DEFAULT_CURRENCY: "a place without a country's currency gets RUB (services/stores/countries.ts)",
  MEDIA_DIR: "embedded, pictures are kept in DATA_DIR/media (services/stores/open-blob-store.ts)",
  TRACING_INTERVAL_MS: "finished spans are sent every 5 s (shared/tracing/index.ts)",
  TRACING_QUEUE_SIZE: "a process holds at most 10,000 finished spans (shared/tracing/index.ts)",
  ADMIN_SOCKET: "an embedded server always takes CLI commands on DATA_DIR/admin.sock (bin/start.ts)",
  NOTIFIER_ACK_WAIT_SECONDS:
    "JetStream hands a silent job out again after 15 s (services/notifier/delivery-bounds.ts)",
  NODE_ID: "a node's id is <NATS user or service>.<host>-<pid> (app/broker-options.ts)",
  PUSH_BATCH_CONCURRENCY: "4 batches of 500 tokens are in flight (services/notifier/deliver.ts)",
  STORE_IN_MEMORY: "the embedded store keeps its files in DATA_DIR/db; a test gives a fresh DATA_DIR",
  REFRESH_ACCESS_TOKEN_MAX_AGE:
    "an access token expired up to REFRESH_TOKEN_TTL ago may refresh (shared/auth/access-token.ts)",
  AUTH_CACHE_ENTRIES: "each auth cache keeps at most 100,000 entries (shared/runtime/local-cache.ts)",
  UPLOADS_MAX: "a gateway takes 32 uploads at once (services/gateway/upload-slots.ts)",
  UPLOADS_MAX_PER_CALLER: "a caller sends 4 uploads at once to a gateway (services/gateway/upload-slots.ts)",
  UPLOAD_SLOT_WAIT_MS: "an upload waits 2 s for a slot (services/gateway/upload-slots.ts)",
  UPLOAD_TIMEOUT_MS: "an upload may take 2 min (shared/contracts/stores.ts)",
  HTTP_REQUEST_TIMEOUT_MS: "a request may take 30 s (services/gateway/http-bounds.ts)",
  HTTP_HEADERS_TIMEOUT_MS: "headers must be in within 10 s (services/gateway/http-bounds.ts)",
  HTTP_BODY_IDLE_TIMEOUT_MS: "a body may go 10 s without a byte (services/gateway/http-bounds.ts)",
  RESPONSE_CACHE_MB: "a gateway keeps at most 128 MiB of answers (services/gateway/response-cache.ts)",
  AUTH_FAILURE_LIMIT: "600 refused credentials a minute per address (services/gateway/address-limits.ts)",
  TRACING_EXPORTER:
    "TRACING_ENDPOINT's path tells: one ending in /v1/traces is sent OTLP/HTTP, any other Zipkin v2 (shared/tracing/index.ts)",
  SEED_ON_EMPTY:
    "an empty embedded store is seeded only by a process running every service outside production (bin/start.ts)",
  REQUEST_BODY_LIMIT:
    "a JSON body may take 8 MiB, a multicast MULTICAST_MAX_RECIPIENTS × 80 bytes if more (services/gateway/routes.ts)",
  STORE_FSYNC:
    "embedded writes are not synced (shared/storage/nedb.ts); MongoDB's durability is MONGO_URI's write concern (journal=true)",
};

/** Settings no longer read, and what replaced them. */
export const RETIRED_SETTINGS: Readonly<Record<string, string>> = {
  ...Object.fromEntries(
    Object.entries(NOW_CONSTANTS).map(([name, now]) => [name, `${name} is no longer read: ${now}`]),
  ),
  JWT_SECRET:
    "JWT_SECRET is no longer read: JWT_PRIVATE_KEYS (auth only) signs access tokens and REFRESH_TOKEN_SECRETS keys refresh tokens; put the old value in REFRESH_TOKEN_SECRETS (after a new first secret) and JWT_LEGACY_SECRETS to keep the tokens issued with it working (docs/operations.md, Keys)",
  JWT_ALGORITHM: "JWT_ALGORITHM is no longer read: access tokens are ES256 (JWT_PRIVATE_KEYS)",
  STORE_COMPACTION_INTERVAL_SECONDS:
    "STORE_COMPACTION_INTERVAL_SECONDS is no longer read: the embedded store compacts a file when NeDB loads it, at start (docs/decisions/0078-nedb-compaction-while-running.md)",
  STORE_COMPACTION_MAX_MB:
    "STORE_COMPACTION_MAX_MB is no longer read: the embedded store compacts a file when NeDB loads it, at start (docs/decisions/0078-nedb-compaction-while-running.md)",
};

/**
 * What a process should print at start about retired settings it was given (outside production), and
 * about retired hooks INTERNALS_HOOKS_OFF names.
 */
export function retiredSettingsIn(env: Record<string, string | undefined> = process.env): string[] {
  const settings = Object.entries(RETIRED_SETTINGS)
    .filter(([name]) => env[name] !== undefined && env[name] !== "")
    .map(([, message]) => message);
  const hooks = list(env.INTERNALS_HOOKS_OFF ?? "", "INTERNALS_HOOKS_OFF")
    .filter((name) => name in RETIRED_HOOKS)
    .map((name) => `INTERNALS_HOOKS_OFF names '${name}', a hook no longer there: ${RETIRED_HOOKS[name]}`);
  return [...settings, ...hooks];
}

const AUTH_ONLY = ["JWT_PRIVATE_KEYS", "REFRESH_TOKEN_SECRETS", "JWT_LEGACY_SECRETS"] as const;

/**
 * The token keys and secrets (docs/decisions/0132): in any environment, secrets of 32 characters at
 * least and a refresh bound within the refresh token's life; in production, keys and secrets present
 * where auth runs and nowhere else, none published, the refresh secret strong, and no retired setting.
 */
function checkTokenKeys(config: Config, env: Record<string, string | undefined>): void {
  checkSecretLengths("REFRESH_TOKEN_SECRETS", config.refreshTokenSecrets);
  checkSecretLengths("JWT_LEGACY_SECRETS", config.jwtLegacySecrets);
  if (config.nodeEnv !== "production") return;
  // Still set, it says the operator believes it signs, and it sits in every process's environment.
  if (env.JWT_SECRET) throw new ConfigError(RETIRED_SETTINGS.JWT_SECRET);
  if (!config.services.includes("auth")) {
    const misplaced = AUTH_ONLY.find((name) => env[name]);
    if (misplaced) {
      throw new ConfigError(
        `${misplaced} is set on a process that does not run auth (SERVICES=${config.services.join(",")}): give it to auth alone`,
      );
    }
    return;
  }
  if (config.jwtPrivateKeys.length === 0) {
    throw new ConfigError(
      "JWT_PRIVATE_KEYS must be set in production where auth runs (openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256)",
    );
  }
  if (config.refreshTokenSecrets.length === 0) {
    throw new ConfigError(
      "REFRESH_TOKEN_SECRETS must be set in production where auth runs (openssl rand -hex 32)",
    );
  }
  checkProductionKeys("JWT_PRIVATE_KEYS", config.jwtPrivateKeys);
  checkProductionSecrets("REFRESH_TOKEN_SECRETS", config.refreshTokenSecrets, { firstMustBeStrong: true });
  checkProductionSecrets("JWT_LEGACY_SECRETS", config.jwtLegacySecrets, { firstMustBeStrong: false });
}

/** Whether an address carries a user or password (`scheme://user:pass@host`). */
const hasUserInfo = (url: string): boolean => /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(url.trim());

/**
 * Credentials live in their own settings (from Secrets), never in an address: addresses are plain
 * configuration that may be logged or shown, and a refusal names the setting without echoing its value.
 */
function checkCredentials(config: Config): void {
  const addresses: Array<[string, string, string]> = [
    ["TRANSPORTER", config.transporter, "NATS_USER and NATS_PASSWORD"],
    ["CACHER", config.cacher, "REDIS_USER and REDIS_PASSWORD"],
    ["MONGO_URI", config.mongoUri, "MONGO_USER and MONGO_PASSWORD"],
  ];
  for (const [env, value, settings] of addresses) {
    if (value.split(",").some(hasUserInfo)) {
      throw new ConfigError(`${env} must not carry credentials: set ${settings} instead`);
    }
  }
  if (config.transporter && !isNats(config)) {
    throw new ConfigError("TRANSPORTER must be nats://host:port or tls://host:port (comma-separated)");
  }
  for (const [user, password, env] of [
    [config.natsUser, config.natsPassword, "NATS"],
    [config.redisUser, config.redisPassword, "REDIS"],
    [config.mongoUser, config.mongoPassword, "MONGO"],
  ] as const) {
    if (password && !user) throw new ConfigError(`${env}_PASSWORD is set without ${env}_USER`);
  }
  if (config.natsTlsDir !== "") checkTlsDir(config.natsTlsDir);
}

/**
 * NATS_TLS_DIR holds files under the names a Kubernetes TLS Secret (and cert-manager's) mounts them
 * with: `ca.crt` (a private CA that signed the server's certificate) and, for a client certificate,
 * `tls.crt` with its `tls.key`. A folder with neither, or a certificate without its key, is refused at
 * start rather than found out at the first connection.
 */
function checkTlsDir(dir: string): void {
  const has = (name: string) => fs.existsSync(path.join(dir, name));
  if (!fs.existsSync(dir))
    throw new ConfigError(`NATS_TLS_DIR is not a folder this process can read: ${dir}`);
  if (!has("ca.crt") && !has("tls.crt")) {
    throw new ConfigError("NATS_TLS_DIR must hold ca.crt, or tls.crt and tls.key, or all three");
  }
  if (has("tls.crt") !== has("tls.key")) {
    throw new ConfigError("NATS_TLS_DIR's tls.crt and tls.key go together");
  }
}

/** True when the transporter is NATS (`nats://`, or `tls://` for NATS over TLS). */
export const isNats = (config: Pick<Config, "transporter">): boolean =>
  config.transporter !== "" && config.transporter.split(",").every((u) => /^(nats|tls):\/\//i.test(u.trim()));

/** True when this process runs without a transporter: everything in one broker. */
export const isEmbedded = (config: Config): boolean => config.transporter === "";

/** The services of the system, which a process runs unless SERVICES names fewer. */
export const ALL_SERVICES: readonly string[] = configSchema.services.default.split(",");

/** True when this process runs every service of the system (what `npm start` does). */
export const runsEverything = (config: Config): boolean =>
  ALL_SERVICES.every((name) => config.services.includes(name));

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
