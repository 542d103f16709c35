import path from "node:path";
import {
  configOf,
  bindConfig,
  configSchema,
  isEmbedded,
  loadConfig,
  RETIRED_SETTINGS,
  retiredSettingsIn,
  runsEverything,
} from "../../../../shared/config";
import { ConfigError } from "../../../../shared/errors";

describe("loadConfig", () => {
  it("when no variable is set, then every setting has its documented default", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      nodeEnv: "development",
      port: 3000,
      host: "127.0.0.1",
      services: ["gateway", "auth", "users", "rounds", "stores", "settings", "notifier"],
      transporter: "",
      cacher: "Memory",
      cacheTtlSeconds: 60,
      logLevel: "info",
      jwtPrivateKeys: [],
      refreshTokenSecrets: [],
      jwtLegacySecrets: [],
      accessTokenTtlSeconds: 900,
      refreshTokenTtlSeconds: 2592000,
      requestTimeoutMs: 10000,
    });
    expect(config.dataDir).toBe(path.resolve("./data"));
    expect(isEmbedded(config)).toBe(true);
    expect(runsEverything(config)).toBe(true);
    expect(runsEverything(loadConfig({ SERVICES: "gateway,auth,users,rounds,stores,settings" }))).toBe(false);
  });

  it("when variables are set, then they override the defaults with parsed values", () => {
    const config = loadConfig({
      PORT: "8080",
      SERVICES: " gateway , rounds ,, ",
      LOG_LEVEL: "debug",
      TRANSPORTER: "nats://127.0.0.1:4222",
      DATA_DIR: "/tmp/rounds-data",
    });
    expect(config).toMatchObject({
      port: 8080,
      services: ["gateway", "rounds"],
      logLevel: "debug",
      transporter: "nats://127.0.0.1:4222",
      dataDir: "/tmp/rounds-data",
    });
    expect(isEmbedded(config)).toBe(false);
  });

  it("when a setting that became a constant is still given, then the start names it as no longer read and what holds now", () => {
    expect(retiredSettingsIn({ NOTIFIER_JOB_RETENTION_HOURS: "2000", OUTBOX_RETENTION_HOURS: "" })).toEqual([
      "NOTIFIER_JOB_RETENTION_HOURS is no longer read: an ended job is kept 30 days (services/notifier/retention.ts)",
    ]);
    for (const name of Object.keys(RETIRED_SETTINGS)) {
      expect(Object.values(configSchema).map((e) => e.env)).not.toContain(name);
    }
  });

  it("when a variable is the empty string, then its default is used", () => {
    expect(loadConfig({ PORT: "", LOG_LEVEL: "" })).toMatchObject({ port: 3000, logLevel: "info" });
  });

  it("when the configuration is loaded, then it is frozen", () => {
    expect(Object.isFrozen(loadConfig({}))).toBe(true);
  });

  it.each([
    ["PORT", "abc"],
    ["PORT", "80.5"],
    ["PORT", "70000"],
    ["PORT", "-1"],
    ["CACHE_TTL", "0"],
    ["ACCESS_TOKEN_TTL", "10"],
  ])("when %s is %p, then it is a ConfigError naming the variable", (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^${name} must be an integer`));
  });

  it("when a boolean or a choice is not one of its values, then it is a ConfigError", () => {
    expect(() => loadConfig({ LOG_FORMAT: "maybe" })).toThrow(ConfigError);
    expect(() => loadConfig({ NODE_ENV: "staging" })).toThrow(
      "NODE_ENV must be one of development, test, production",
    );
  });

  it("when TRACING_ENDPOINT is empty, then tracing is off; when it is not an http(s) URL, then it is a ConfigError", () => {
    expect(loadConfig({}).tracingEndpoint).toBe("");
    expect(loadConfig({ TRACING_ENDPOINT: "http://jaeger:9411/api/v2/spans" }).tracingEndpoint).toBe(
      "http://jaeger:9411/api/v2/spans",
    );
    expect(() => loadConfig({ TRACING_ENDPOINT: "jaeger:9411" })).toThrow(
      "TRACING_ENDPOINT must be an http:// or https:// URL",
    );
    expect(() => loadConfig({ TRACING_ENDPOINT: "not a url" })).toThrow(ConfigError);
  });

  it("when TRACING_SAMPLE_RATE is unset, then one request in ten is traced; set, it is a share between 0 and 1, anything else a ConfigError", () => {
    expect(loadConfig({}).tracingSampleRate).toBe(0.1);
    expect(loadConfig({ TRACING_SAMPLE_RATE: "0" }).tracingSampleRate).toBe(0);
    expect(loadConfig({ TRACING_SAMPLE_RATE: "1" }).tracingSampleRate).toBe(1);
    expect(loadConfig({ TRACING_SAMPLE_RATE: "0.05" }).tracingSampleRate).toBe(0.05);
    expect(loadConfig({ TRACING_SAMPLE_RATE: ".5" }).tracingSampleRate).toBe(0.5);
    for (const bad of ["1.5", "-0.1", "10%", "abc", "1e-2"]) {
      expect(() => loadConfig({ TRACING_SAMPLE_RATE: bad })).toThrow(
        "TRACING_SAMPLE_RATE must be a number between 0 and 1",
      );
    }
  });

  // The token keys' checks: test/unit/shared/config/key-checks.test.ts.
});

describe("configOf", () => {
  it("when a configuration was bound to a broker, then configOf returns it", () => {
    const broker = {};
    const config = loadConfig({});
    bindConfig(broker, config);
    expect(configOf(broker)).toBe(config);
  });

  it("when nothing was bound to a broker, then configOf is a ConfigError", () => {
    expect(() => configOf({})).toThrow(ConfigError);
  });
});

describe("limits and proxies", () => {
  it("when nothing is set, then limits per address and per user on writes are on, and no proxy is trusted", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      addressRateLimit: 60000,
      rateLimits: "rounds.join=120,auth.refresh=60,stores.createEvent=60,notifier.sendMulticast=600",
      trustedProxies: [],
    });
  });

  it("when TRUSTED_PROXIES lists addresses and CIDRs, then they are read", () => {
    expect(loadConfig({ TRUSTED_PROXIES: "10.0.0.0/8, 192.0.2.1,fd00::/8" }).trustedProxies).toEqual([
      "10.0.0.0/8",
      "192.0.2.1",
      "fd00::/8",
    ]);
  });

  it.each(["10.0.0.0/40", "proxy.local", "10.0.0.1/8/2"])(
    "when TRUSTED_PROXIES has %j, then a ConfigError names the setting",
    (entry) => {
      expect(() => loadConfig({ TRUSTED_PROXIES: entry })).toThrow(
        /^TRUSTED_PROXIES must list IP addresses or CIDRs/,
      );
    },
  );

  it("when the removed TRUST_PROXY is true, then one line names TRUSTED_PROXIES; false is the old default and ignored", () => {
    expect(() => loadConfig({ TRUST_PROXY: "true" })).toThrow(
      /^TRUST_PROXY is replaced by TRUSTED_PROXIES: list the addresses or CIDRs/,
    );
    expect(loadConfig({ TRUST_PROXY: "false" }).trustedProxies).toEqual([]);
  });
});
