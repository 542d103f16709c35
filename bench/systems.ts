/**
 * The two topologies under load, each with the scenarios' data in place:
 * - embedded: one process, `node dist/bin/start.js` with default settings on a prepared DATA_DIR;
 * - distributed: the integration tier's cluster (gateway and each service as its own process over a
 *   private nats-server and redis-server, test/support/cluster.ts).
 * Either way the servers are processes of their own, apart from the load generator. They store in
 * embedded stores, or, when the bench's environment has MONGO_URI, in MongoDB: a fresh database of that
 * server per system, dropped when it stops (benchStore).
 */
import fs from "node:fs";
import type { ChildProcess } from "node:child_process";
import type { ServiceBroker } from "moleculer";
import { loadConfig } from "../shared/config";
import { createBroker } from "../app/broker";
import { startCluster, type Cluster, type ClusterOptions } from "../test/support/cluster";
import { dropDatabase, mongoForTests, uniqueDatabaseName, withDatabase } from "../test/support/mongo";
import { stopProcess as stopChild } from "../test/support/processes";
import type { Fixtures } from "./fixtures";
import type { Watched } from "./cpu";
import { cleanEnv, freePort, startNode, tmpDir, waitFor } from "./lib";
import { BENCH_LIMITS } from "./limits";

export type Topology = "embedded" | "distributed";

/** Creates a scenario's data through the services' actions, on any broker that reaches them. */
export type Seeder<F> = (broker: ServiceBroker) => Promise<F>;

export interface System<F = Fixtures> {
  topology: Topology;
  baseUrl: string;
  fixtures: F;
  /** Distributed: the cluster's client node, which reaches every service over NATS. */
  client?: ServiceBroker;
  /** Its server processes, for their CPU time per request (bench/cpu.ts). */
  watched: Watched[];
  stop(): Promise<void>;
}

/**
 * Where the systems of cases 1–5, 8 and 9 store: MongoDB when the bench's environment has MONGO_URI (an
 * operator measuring production's store), else an embedded store per process, which keeps runs on one
 * machine comparable. Cases 6 and 7 keep embedded stores either way.
 */
export const benchStore = (): "mongodb" | "embedded" => (mongoForTests().uri ? "mongodb" : "embedded");

/** MONGO_USER and MONGO_PASSWORD from the bench's environment, for the servers (never in the URI). */
export function mongoCredentials(): Record<string, string> {
  const { MONGO_USER, MONGO_PASSWORD } = process.env;
  return MONGO_USER && MONGO_PASSWORD ? { MONGO_USER, MONGO_PASSWORD } : {};
}

/** The report header's line on the stores, naming MongoDB's hosts only. */
export function storeHeader(): string {
  const uri = mongoForTests().uri;
  if (!uri) return "Stores: embedded (each server process its own folder); MONGO_URI was not set.";
  const hosts = /^mongodb(?:\+srv)?:\/\/(?:[^@/]*@)?([^/?]+)/.exec(uri)?.[1] ?? "?";
  return (
    `Stores: MongoDB at ${hosts} (MONGO_URI), a fresh database per system of cases 1–5, 8 and 9, ` +
    "dropped after it; cases 6 and 7 keep embedded stores."
  );
}

/** A fresh database of MONGO_URI's server for one embedded system, or null (embedded stores). */
function freshDatabase(): string | null {
  const uri = mongoForTests().uri;
  return uri ? withDatabase(uri, uniqueDatabaseName("bench")) : null;
}

/** Drops a system's database; a failure to drop is said, not fatal (the measurement is done). */
async function dropQuietly(uri: string | null): Promise<void> {
  if (!uri) return;
  await dropDatabase(uri).catch((err: Error) =>
    process.stderr.write(`could not drop the bench's database ${uri.split("/").pop()}: ${err.message}\n`),
  );
}

const healthy = (baseUrl: string) => () => fetch(`${baseUrl}/health`).then((r) => r.status === 200);

const stopProcess = (p: ChildProcess, signal: NodeJS.Signals = "SIGTERM") =>
  new Promise<void>((resolve) => {
    if (p.exitCode !== null || p.signalCode !== null) return resolve();
    p.once("exit", () => resolve());
    p.kill(signal);
  });

/**
 * The embedded store is single-process: the data is created first by the domain services running in
 * this process on the server's DATA_DIR, then that broker stops and the server starts on the folder.
 * `nodeArgs` go to the server's node (the profile uses --cpu-prof).
 */
export async function startEmbedded<F>(
  seed: Seeder<F>,
  opts: {
    nodeArgs?: string[];
    stopSignal?: NodeJS.Signals;
    startTimeoutMs?: number;
    /** More environment for the server only (the soak asks for LOG_LEVEL=info). */
    serverEnv?: Record<string, string>;
  } = {},
): Promise<System<F> & { process: ChildProcess; dataDir: string; stopServer(): Promise<void> }> {
  const dataDir = tmpDir("bench-http-");
  const port = await freePort();
  const mongoUri = freshDatabase();
  const env: Record<string, string> = {
    PORT: String(port),
    DATA_DIR: dataDir,
    ...(mongoUri && { MONGO_URI: mongoUri, ...mongoCredentials() }),
  };
  const config = loadConfig({ ...cleanEnv(env), LOG_LEVEL: "error" });
  const prep = createBroker(
    config,
    config.services.filter((s) => s !== "gateway"),
  );
  let fixtures: F;
  await prep.start();
  try {
    await prep.waitForServices(["users", "auth", "stores", "rounds"], 30_000);
    fixtures = await seed(prep);
  } catch (err) {
    await prep.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    await dropQuietly(mongoUri);
    throw err;
  }
  // Stopping closes the store and releases its folder for the server.
  await prep.stop();

  const server = startNode({ ...env, ...opts.serverEnv }, opts.nodeArgs);
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await waitFor(healthy(baseUrl), opts.startTimeoutMs ?? 60_000, "the embedded server");
  } catch (err) {
    await stopProcess(server);
    fs.rmSync(dataDir, { recursive: true, force: true });
    await dropQuietly(mongoUri);
    throw err;
  }
  return {
    topology: "embedded",
    baseUrl,
    fixtures,
    process: server,
    dataDir,
    watched: [{ name: "server", pid: () => server.pid }],
    /** Stops the server and leaves its folder (the soak reads it afterwards); `stop` removes it. */
    stopServer: () => stopProcess(server, opts.stopSignal),
    async stop() {
      await stopProcess(server, opts.stopSignal);
      fs.rmSync(dataDir, { recursive: true, force: true });
      await dropQuietly(mongoUri);
    },
  };
}

/**
 * The integration tier's cluster; the data is created through its client node over NATS. `nodeArgs`
 * go to node in the named processes ("gateway", "rounds"…); those are stopped first with `stopSignal`
 * (the profile sends SIGINT so that V8 writes its profile), the rest as the cluster always does.
 */
export async function startDistributed<F>(
  seed: Seeder<F>,
  opts: { nodeArgs?: ClusterOptions["nodeArgs"]; stopSignal?: NodeJS.Signals } = {},
): Promise<System<F>> {
  const cluster = await startCluster({
    nodeArgs: opts.nodeArgs,
    store: benchStore(),
    env: { ...BENCH_LIMITS, ...mongoCredentials() },
  });
  const stop = async () => {
    const chosen = [...cluster.processes.values()].filter((p) => opts.nodeArgs?.[p.name]);
    await Promise.all(chosen.map((p) => stopChild(p.child, opts.stopSignal ?? "SIGTERM")));
    await cluster.stop();
  };
  try {
    const fixtures = await seed(cluster.client);
    return {
      topology: "distributed",
      baseUrl: cluster.baseUrl,
      fixtures,
      client: cluster.client,
      watched: clusterWatched(cluster),
      stop,
    };
  } catch (err) {
    await cluster.stop();
    throw err;
  }
}

/** Every process of a cluster: each service's, then its nats-server and redis-server. */
export function clusterWatched(cluster: Cluster): Watched[] {
  return [
    ...[...cluster.processes.entries()].map(([key, p]) => ({ name: key, pid: () => p.child?.pid })),
    { name: "nats", pid: () => cluster.nats.process.pid },
    { name: "redis", pid: () => cluster.redis.process.pid },
  ];
}
