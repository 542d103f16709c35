/**
 * A real cluster for the integration tier: a private nats-server (JetStream) and redis-server, then the
 * gateway and each service as its own OS process (`node dist/bin/start.js` with SERVICES=<name>), each
 * with its own data folder, configured only by environment as operators run them. The test process joins
 * as one more node without services, so tests can call actions and host probes over NATS.
 *
 * Storage: each process's own embedded store by default. When the test environment has MONGO_URI
 * (test/support/mongo.ts), every process of the cluster stores in one fresh MongoDB database instead,
 * dropped when the cluster stops: the topology operators run, and the only one in which two processes
 * of a stateful service can share its data.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ServiceBroker, ServiceSchema } from "moleculer";
import { loadConfig, type Config } from "../../shared/config";
import { createBroker } from "../../app/broker";
import { dbDir } from "../../shared/storage";
import { MongoStore } from "../../shared/storage/mongo";
import { freePort, startNatsServer, startRedisServer, type RunningBroker } from "./brokers";
import { dropDatabase, mongoForTests, uniqueDatabaseName, withDatabase } from "./mongo";
import { bin, buildDist, childEnv, root, SERVER_NODE_FLAGS, stopProcess } from "./processes";
import { newRefreshSecret, newSigningKeyPem } from "./token-keys";
import { nedbFolderReader, type StoreReader } from "./store-reader";

export const ALL_SERVICES = ["auth", "users", "rounds", "stores", "settings", "notifier"];

export interface ServiceProcess {
  /** The service it runs (SERVICES). */
  name: string;
  nodeID: string;
  dataDir: string;
  logFile: string;
  child: ChildProcess | null;
  /** Its environment: change it before start() to start it again otherwise (a key rotation). */
  env: NodeJS.ProcessEnv;
  /** Starts (or starts again, on the same data folder) the process. */
  start(): void;
  /** kill -9: no shutdown hooks, no acknowledgements, nothing flushed. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

export interface Cluster {
  nats: RunningBroker;
  redis: RunningBroker;
  namespace: string;
  baseUrl: string;
  /** The test process's own node (no services of its own, plus any probes passed as `extra`). */
  client: ServiceBroker;
  clientConfig: Config;
  processes: Map<string, ServiceProcess>;
  /** The keys every auth process was started with (JWT_PRIVATE_KEYS, REFRESH_TOKEN_SECRETS): auth's alone. */
  authEnv: Record<string, string>;
  /** The MongoDB database every process stores in (MONGO_URI given to them), or null: embedded stores. */
  mongoUri: string | null;
  /**
   * What the process `name` (a service, or a replica's key such as `rounds#2`) has stored, to assert on
   * (read only): its NeDB files, or the cluster's MongoDB database.
   */
  storeOf(name: string): Promise<StoreReader>;
  /** Resolves when every service process answers its `ready` action; rejects otherwise. */
  ready(): Promise<void>;
  /** Waits until `ready()` resolves (e.g. after a process was started again). */
  waitUntilReady(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  env?: Record<string, string>;
  /** Services to run, one process each (default: all); the gateway always runs. */
  services?: string[];
  /** More than one process of a service, e.g. `{ auth: 2 }` (then keyed `auth`, `auth#2` in `processes`). */
  replicas?: Record<string, number>;
  extra?: ServiceSchema[];
  /**
   * Arguments for node itself, by process name ("gateway" or a service), before the script: e.g.
   * `{ rounds: ["--cpu-prof"] }` (the bench's profile). Every replica of a service gets them.
   */
  nodeArgs?: Record<string, string[]>;
  /** Variables for single processes on top of `env`, by process key (`rounds`, `rounds#2`, `gateway`). */
  processEnv?: Record<string, Record<string, string>>;
  /**
   * Where the processes store: "mongodb" (a fresh database of MONGO_URI's server) or "embedded" (a
   * folder each). Default: "mongodb" when MONGO_URI is set for the tests, else "embedded".
   */
  store?: "mongodb" | "embedded";
}

let built = false;

/** The processes run the compiled code: compile once per test file run. */
function ensureBuilt(): void {
  if (built) return;
  buildDist();
  built = true;
}

function baseEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return childEnv({
    NODE_ENV: "test",
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    ...extra,
  });
}

function serviceProcess(name: string, env: NodeJS.ProcessEnv, nodeArgs: string[] = []): ServiceProcess {
  // `<service>.<host>-<pid>`, as the process names itself (app/broker-options.ts, nodeIdOf): NATS lets
  // the other services call a node only so (shared/ops/nats-auth.ts). A restart is a new pid, a new id.
  const host = os
    .hostname()
    .toLowerCase()
    .replace(/[.*>\s]/g, "-");
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `cluster-${name}-`));
  const logFile = path.join(dataDir, "process.log");
  const proc: ServiceProcess = {
    name,
    get nodeID() {
      return `${name}.${host}-${proc.child?.pid ?? "not-started"}`;
    },
    dataDir,
    logFile,
    child: null,
    env,
    start() {
      const out = fs.openSync(logFile, "a");
      proc.child = spawn(process.execPath, [...SERVER_NODE_FLAGS, ...nodeArgs, bin("start")], {
        cwd: root,
        env: { ...proc.env, SERVICES: name, DATA_DIR: dataDir },
        stdio: ["ignore", out, out],
      });
      fs.closeSync(out);
    },
    async kill() {
      await stopProcess(proc.child, "SIGKILL");
    },
    async stop() {
      await stopProcess(proc.child, "SIGTERM");
    },
  };
  return proc;
}

/**
 * With KEEP_CLUSTER_LOGS naming a folder, each process's log is copied there when the cluster stops
 * (named by its data folder and key), for reading what the processes saw during a fault case.
 */
function keepLogs(processes: Map<string, ServiceProcess>): void {
  const dir = process.env.KEEP_CLUSTER_LOGS;
  if (!dir) return;
  fs.mkdirSync(dir, { recursive: true });
  for (const [key, p] of processes) {
    if (!fs.existsSync(p.logFile)) continue;
    const name = `${path.basename(p.dataDir)}-${key.replace("#", "-")}.log`;
    fs.copyFileSync(p.logFile, path.join(dir, name));
  }
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number, logs: string[]) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  const tails = logs.map(
    (f) => `--- ${f}\n${fs.existsSync(f) ? fs.readFileSync(f, "utf8").slice(-2000) : ""}`,
  );
  throw new Error(`${what} did not happen within ${timeoutMs} ms\n${tails.join("\n")}`);
}

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  ensureBuilt();
  const namespace = `it${process.pid}${Math.random().toString(36).slice(2, 6)}`;
  // NATS and Redis with the deployments' users (shared/ops): each process connects as its service,
  // the test's own node as ops, which hosts the stand-in services of `extra` when there are any.
  const [nats, redis] = await Promise.all([
    startNatsServer({ namespace, opsHostsServices: (opts.extra?.length ?? 0) > 0 }),
    startRedisServer({ namespace }),
  ]);
  try {
    return await startProcesses(nats, redis, namespace, opts);
  } catch (err) {
    await Promise.all([nats.stop(), redis.stop()]);
    throw err;
  }
}

async function startProcesses(
  nats: RunningBroker,
  redis: RunningBroker,
  namespace: string,
  opts: ClusterOptions,
): Promise<Cluster> {
  const port = await freePort();
  const mongo = mongoForTests();
  const store = opts.store ?? (mongo.uri ? "mongodb" : "embedded");
  if (store === "mongodb" && !mongo.uri) throw new Error(`a cluster on MongoDB needs ${mongo.skipReason}`);
  const mongoUri = store === "mongodb" ? withDatabase(mongo.uri!, uniqueDatabaseName("cluster")) : null;
  /** A process's own NATS and Redis user and password (its service's). */
  const credentialsOf = (user: string) => ({ ...nats.credentials(user), ...redis.credentials(user) });
  const env = baseEnv({
    TRANSPORTER: nats.url,
    CACHER: redis.url,
    NAMESPACE: namespace,
    ...(mongoUri ? { MONGO_URI: mongoUri } : {}),
    ...opts.env,
  });
  // The same variables as the processes get: a bad one fails here, before any process starts.
  const clientConfig = loadConfig({
    ...(env as Record<string, string>),
    ...credentialsOf("ops"),
    DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), "cluster-client-")),
    LOG_LEVEL: opts.env?.LOG_LEVEL ?? "error",
  });
  const services = opts.services ?? ALL_SERVICES;
  const processes = new Map<string, ServiceProcess>();
  // The token keys go to auth alone, as in production: one key and secret for all its replicas.
  const authEnv = { JWT_PRIVATE_KEYS: newSigningKeyPem(), REFRESH_TOKEN_SECRETS: newRefreshSecret() };
  const envOf = (key: string) => ({
    ...env,
    ...(key.split("#")[0] === "auth" ? authEnv : {}),
    ...credentialsOf(key.split("#")[0]),
    ...opts.processEnv?.[key],
  });
  processes.set(
    "gateway",
    serviceProcess("gateway", { ...envOf("gateway"), PORT: String(port) }, opts.nodeArgs?.gateway),
  );
  for (const name of services) {
    for (let i = 1; i <= (opts.replicas?.[name] ?? 1); i++) {
      const key = i === 1 ? name : `${name}#${i}`;
      processes.set(key, serviceProcess(name, envOf(key), opts.nodeArgs?.[name]));
    }
  }
  for (const p of processes.values()) p.start();

  const client = createBroker(clientConfig, []);
  for (const schema of opts.extra ?? []) client.createService(schema);
  const baseUrl = `http://127.0.0.1:${port}`;
  const logs = [...processes.values()].map((p) => p.logFile);
  /** Each service process answers its `ready` action (asked by node, so every replica is asked). */
  const ready = async () => {
    const services = [...processes.values()].filter((p) => p.name !== "gateway");
    await Promise.all(services.map((p) => client.call(`${p.name}.ready`, {}, { nodeID: p.nodeID })));
  };
  // One connection for the test's reads of the cluster's MongoDB database, opened when first needed.
  let mongoReader: Promise<MongoStore> | null = null;
  const storeOf = async (name: string): Promise<StoreReader> => {
    if (mongoUri) return (mongoReader ??= MongoStore.connect(mongoUri));
    const proc = processes.get(name);
    if (!proc) throw new Error(`no process ${name} in the cluster`);
    return nedbFolderReader(dbDir(proc));
  };
  const stopAll = async () => {
    await client.stop().catch(() => undefined);
    await Promise.all([...processes.values()].map((p) => p.stop()));
    await Promise.all([nats.stop(), redis.stop()]);
    keepLogs(processes);
    for (const p of processes.values()) fs.rmSync(p.dataDir, { recursive: true, force: true });
    fs.rmSync(clientConfig.dataDir, { recursive: true, force: true });
    if (mongoReader) await (await mongoReader.catch(() => null))?.close();
    if (mongoUri) await dropDatabase(mongoUri);
  };
  try {
    await client.start();
    await client.waitForServices(["gateway", ...services], 30_000);
    // Every service answers its readiness action (store open, dependencies discovered).
    await waitFor(
      "every service ready",
      async () => {
        await ready();
        return true;
      },
      30_000,
      logs,
    );
    await waitFor(
      "the gateway listening",
      async () => (await fetch(`${baseUrl}/health`)).status === 200,
      30_000,
      logs,
    );
  } catch (err) {
    await stopAll().catch(() => undefined);
    throw err;
  }

  return {
    nats,
    redis,
    namespace,
    baseUrl,
    client,
    clientConfig,
    processes,
    authEnv,
    mongoUri,
    storeOf,
    ready,
    waitUntilReady: (timeoutMs = 30_000) =>
      waitFor(
        "every service ready",
        async () => {
          await ready();
          return true;
        },
        timeoutMs,
        logs,
      ),
    stop: stopAll,
  };
}
