/**
 * Starts the whole system, seeds the demo dataset and gives tests an HTTP client. By default in this
 * process (embedded mode, in-memory store, gateway on a free port); with SYSTEM_TOPOLOGY=cluster (the
 * integration tier's "cluster" project) as a cluster of OS processes over private NATS and Redis, so
 * the same endpoint cases run through both.
 */
import fs from "node:fs";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import type { Server } from "node:http";
import type { ServiceBroker, ServiceSchema } from "moleculer";
import { bindConfig, loadConfig, type Config } from "../../shared/config";
import { ErrorBody, ValidationErrorBody } from "../../shared/contracts/http";
import { check } from "../../shared/validation";
import { checkContract } from "./contract";
import { call } from "../../shared/contracts";
import { seed, type DemoManifest, type ManifestUser } from "../../shared/ops/seed";
import { createBroker, serviceSchema } from "../../app/broker";
import { storeOf } from "../../shared/storage";
import { startCluster, type Cluster } from "./cluster";
import type { StoreReader } from "./store-reader";
import { channelsDrained } from "./jetstream";
import type { OutboxRelay } from "../../shared/outbox";

export interface System {
  broker: ServiceBroker;
  config: Config;
  baseUrl: string;
  manifest: DemoManifest;
  /** The cluster behind the gateway, when the topology is "cluster". */
  cluster: Cluster | null;
  /** What `service` has stored, to assert on (read only). */
  inspect(service: string): Promise<StoreReader>;
  /** The data folder of the process running `service` (uploaded pictures live there). */
  dataDirOf(service: string): string;
  /**
   * Waits until events emitted so far have been handled. In one process an awaited emit has run its
   * handlers, and the outbox relays' hand-overs are waited for; across processes it has only been
   * published, so wait for the handlers' nodes to settle.
   */
  settle(): Promise<void>;
  /**
   * Starts auth again with these variables on top of its own (a key rotation), each auth process in
   * turn, the next once the one before is ready again. In one process: auth alone is stopped and made
   * again with the new configuration, the gateway and the store staying up.
   */
  restartAuth(env: Record<string, string>): Promise<void>;
  stop(): Promise<void>;
}

export const topology = process.env.SYSTEM_TOPOLOGY === "cluster" ? "cluster" : "embedded";

export interface StartOptions {
  env?: Record<string, string>;
  /** Services to run (default: all). */
  services?: string[];
  /** Extra services, e.g. a faulty stand-in or an event probe. */
  extra?: ServiceSchema[];
  /** Embedded only: settings merged over a service's own, by service (a mechanism's bound, shortened). */
  settings?: Record<string, Record<string, unknown>>;
  /** Cluster only: variables for single processes on top of `env`, by process (`gateway`, `rounds`…). */
  processEnv?: Record<string, Record<string, string>>;
  /** Cluster only: more than one process of a service, e.g. `{ auth: 2 }`. */
  replicas?: Record<string, number>;
}

export const testEnv = (extra: Record<string, string> = {}): Record<string, string> => ({
  // The store's files and uploaded pictures, in a fresh folder of this test system (removed at its stop).
  DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), "rounds-test-")),
  NODE_ENV: "test",
  PORT: "0",
  HOST: "127.0.0.1",
  LOG_LEVEL: "error",
  // A run with hooks into libraries' internals forced off (.ci/run) reaches the system under test.
  ...(process.env.INTERNALS_HOOKS_OFF ? { INTERNALS_HOOKS_OFF: process.env.INTERNALS_HOOKS_OFF } : {}),
  ...extra,
});

export async function startSystem(opts: StartOptions = {}): Promise<System> {
  return topology === "cluster" ? startClusterSystem(opts) : startEmbeddedSystem(opts);
}

async function startEmbeddedSystem(opts: StartOptions): Promise<System> {
  let env = testEnv(opts.env);
  const config = loadConfig(env);
  const broker = createBroker(config, opts.services, { settings: opts.settings });
  for (const schema of opts.extra ?? []) broker.createService(schema);
  await broker.start();
  const gateway = broker.getLocalService("gateway") as unknown as { server: Server };
  const baseUrl = `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`;
  const manifest = await seed(broker, baseUrl).catch(async (err: unknown) => {
    await broker.stop();
    throw err;
  });
  const stop = async () => {
    await broker.stop();
    fs.rmSync(config.dataDir, { recursive: true, force: true });
  };
  return {
    broker,
    config,
    baseUrl,
    manifest,
    cluster: null,
    inspect: () => storeOf(broker, config),
    dataDirOf: () => config.dataDir,
    // Events emitted in this process have run their handlers when the emit resolves; the facts a
    // request handed on to an outbox relay (a join's payment) are published right after its answer.
    settle: async () => {
      for (const svc of broker.services) await (svc as { relay?: OutboxRelay }).relay?.idle();
    },
    restartAuth: async (extra) => {
      env = { ...env, ...extra };
      const next = loadConfig(env);
      const auth = broker.getLocalService("auth");
      if (auth) await broker.destroyService(auth);
      // The services made from now on read the new configuration; the others keep theirs.
      bindConfig(broker, next);
      broker.createService(serviceSchema("auth"));
      await broker.waitForServices(["auth"], 10_000);
    },
    stop,
  };
}

async function startClusterSystem(opts: StartOptions): Promise<System> {
  const cluster = await startCluster({
    env: { LOG_LEVEL: "error", ...opts.env },
    services: opts.services?.filter((s) => s !== "gateway"),
    extra: opts.extra,
    processEnv: opts.processEnv,
    replicas: opts.replicas,
  });
  const manifest = await seed(cluster.client, cluster.baseUrl).catch(async (err: unknown) => {
    await cluster.stop();
    throw err;
  });
  const dataDirOf = (service: string) => {
    const proc = cluster.processes.get(service);
    if (!proc) throw new Error(`no process runs ${service}`);
    return proc.dataDir;
  };
  return {
    broker: cluster.client,
    config: cluster.clientConfig,
    baseUrl: cluster.baseUrl,
    manifest,
    cluster,
    inspect: (service) => cluster.storeOf(service),
    dataDirOf,
    // Plain events: handlers run on arrival, and a round trip to every node after the publish, twice with
    // a pause, outlasts them. Durable facts: every JetStream consumer has handled what was published.
    settle: async () => {
      for (let i = 0; i < 2; i++) {
        await new Promise((r) => setTimeout(r, 150));
        await cluster.ready();
      }
      await channelsDrained(cluster.nats.connectOptions(), cluster.namespace);
    },
    restartAuth: async (extra) => {
      for (const proc of cluster.processes.values()) {
        if (proc.name !== "auth") continue;
        proc.env = { ...proc.env, ...extra };
        await proc.stop();
        proc.start();
        await cluster.waitUntilReady();
      }
      Object.assign(cluster.authEnv, extra);
    },
    stop: () => cluster.stop(),
  };
}

let counter = 0;

/** A fresh user with a token set, for tests that need many distinct users. */
export async function newUser(broker: ServiceBroker, prefix = "user"): Promise<ManifestUser> {
  counter += 1;
  const username = `${prefix}_${process.pid}_${counter}_${Math.random().toString(36).slice(2, 8)}`;
  const phone = `+1${String(Date.now()).slice(-6)}${String(counter).padStart(5, "0")}`;
  const profile = await call(broker, "users.create", {
    phone,
    username,
    first_name: prefix,
    last_name: null,
  });
  const tokens = await call(broker, "auth.issueTokens", { user_id: profile.id });
  return { id: profile.id, username, access_token: tokens.access_token, refresh_token: tokens.refresh_token };
}

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  token?: string;
  apiKey?: string;
  json?: unknown;
  /** A body sent as is (e.g. malformed JSON). */
  raw?: string;
  headers?: Record<string, string>;
}

export async function api<T = any>(
  system: { baseUrl: string },
  method: string,
  path: string,
  opts: RequestOptions = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  if (opts.apiKey !== undefined) headers["x-api-key"] = opts.apiKey;
  let body: string | undefined;
  if (opts.json !== undefined) {
    body = JSON.stringify(opts.json);
    headers["content-type"] = "application/json";
  } else if (opts.raw !== undefined) {
    body = opts.raw;
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(`${system.baseUrl}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: tests that care assert on `text`
  }
  // Health answers are for orchestrators, in their own documented shape (the contract check covers them).
  if (!path.startsWith("/health")) assertErrorShape(res.status, parsed);
  checkContract(method, path, res.status, res.headers.get("content-type"), parsed);
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

/** Every error response the tests see must have the spec's shape (§7); a drift fails the test. */
function assertErrorShape(status: number, body: unknown): void {
  if (status < 400) return;
  const schema = status === 422 ? ValidationErrorBody : ErrorBody;
  const result = check(schema, body);
  if (result !== true) {
    throw new Error(
      `HTTP ${status} body is not in the spec's error shape: ${JSON.stringify(body)} (${JSON.stringify(result)})`,
    );
  }
}
