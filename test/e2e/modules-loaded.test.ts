// Tier: one process only (what one process loads, read from its own module cache).
/**
 * What a process loads: the system built in a child process (its own module cache, as in production),
 * then the packages it holds are read from `require.cache`. A process on the embedded store loads no
 * MongoDB engine, none loads Swagger UI's browser bundle, and a process running some services loads no
 * package only the others use (docs/decisions/0060-node-24-production.md).
 */
import { spawnSync } from "node:child_process";
import { childEnv, root } from "../support/processes";

/** Packages a process holds only when it runs what uses them. */
const WATCHED =
  /node_modules\/(mongoose|mongodb|bson|swagger-ui-dist|moleculer-web|busboy|firebase-admin|@opentelemetry)\//;

const listLoaded = `
const loaded = () => [...new Set(Object.keys(require.cache).map((f) => f.match(${WATCHED.toString()})?.[1]).filter(Boolean))].sort();
`;

/** Starts the whole system on embedded defaults, fetches a /docs asset, lists what is loaded. */
const wholeSystem = `${listLoaded}
const { loadConfig } = require("./shared/config");
const { createBroker } = require("./app/broker");
const broker = createBroker(loadConfig());
broker.start().then(async () => {
  const res = await fetch("http://127.0.0.1:" + broker.getLocalService("gateway").server.address().port + "/docs/swagger-ui.css");
  const list = loaded();
  await broker.stop();
  console.log(JSON.stringify({ docsStatus: res.status, loaded: list }));
});
`;

/** Creates the services SERVICES names (not started: creating them is what loads their modules). */
const someServices = `${listLoaded}
const { loadConfig } = require("./shared/config");
const { createBroker } = require("./app/broker");
const broker = createBroker(loadConfig());
console.log(JSON.stringify({ services: broker.services.map((s) => s.name).filter((n) => !n.startsWith("$")).sort(), loaded: loaded() }));
process.exit(0);
`;

function runChild<T>(script: string, env: Record<string, string> = {}): T {
  const res = spawnSync(process.execPath, ["--require", "tsx/cjs", "-e", script], {
    cwd: root,
    env: childEnv({ PORT: "0", LOG_LEVEL: "warn", ...env }),
    encoding: "utf8",
    timeout: 60_000,
  });
  if (res.status !== 0) throw new Error(`the child process failed (${res.status}): ${res.stderr}`);
  return JSON.parse(res.stdout.trim().split("\n").pop() as string) as T;
}

describe("modules a process loads (child process)", () => {
  it("when the whole system starts without MONGO_URI, then neither the MongoDB engine nor Swagger UI's bundle is loaded, and /docs still serves its assets", () => {
    const { docsStatus, loaded } = runChild<{ docsStatus: number; loaded: string[] }>(wholeSystem);
    expect(docsStatus).toBe(200);
    expect(loaded).toEqual(["busboy", "firebase-admin", "moleculer-web"]);
  });

  it("when a process runs rounds and users only, then it loads neither the gateway's packages nor the notifier's", () => {
    const { services, loaded } = runChild<{ services: string[]; loaded: string[] }>(someServices, {
      SERVICES: "rounds,users",
    });
    expect(services).toEqual(["rounds", "users"]);
    expect(loaded).toEqual([]);
  });

  it("when a process runs the gateway and the notifier, then it loads their packages", () => {
    const { loaded } = runChild<{ loaded: string[] }>(someServices, { SERVICES: "gateway,notifier" });
    expect(loaded).toEqual(["busboy", "firebase-admin", "moleculer-web"]);
  });

  it("when spans go to a Zipkin endpoint, then OpenTelemetry's packages are not loaded; to an OTLP one (/v1/traces), they are", () => {
    const tracing = { SERVICES: "rounds", TRACING_ENDPOINT: "http://127.0.0.1:9/api/v2/spans" };
    expect(runChild<{ loaded: string[] }>(someServices, tracing).loaded).toEqual([]);
    const otlp = runChild<{ loaded: string[] }>(someServices, {
      ...tracing,
      TRACING_ENDPOINT: "http://127.0.0.1:9/v1/traces",
    });
    expect(otlp.loaded).toEqual(["@opentelemetry"]);
  });
});
