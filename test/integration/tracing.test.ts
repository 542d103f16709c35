/**
 * One trace per request across processes. The clusters run with TRACING_ENDPOINT pointing at a stand-in
 * collector (a plain HTTP server here that keeps what is POSTed to /api/v2/spans) and the exporters'
 * interval and queue (batches every 5 s, queue of 10,000, shared/tracing): the tests wait for the
 * batches as an operator's collector would.
 *
 * Sampling (TRACING_SAMPLE_RATE) is decided by the gateway and followed by every process. The first
 * cluster traces every request at the gateway (rate 1) while every other process has a rate of 0: the
 * full traces below show that they follow the gateway's "yes", facts through the outbox included. The
 * second is the other way round (gateway 0, the rest 1): nothing of a request reaches the collector,
 * though the services' own rate would trace everything, except the gateway's span of a 5xx. A caller's
 * trace context (traceparent) overrides the gateway's rate both ways (decision 0143). The third cluster
 * sends OTLP (its endpoint ends in /v1/traces) at a rate of 0 everywhere: only a caller's "sampled" is traced, and
 * its collector-down case is the first cluster's, through OpenTelemetry's exporter.
 */
import http from "node:http";
import { TRACING_INTERVAL_MS, TRACING_QUEUE_SIZE } from "../../shared/tracing";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import { seed, type DemoManifest } from "../../shared/ops/seed";
import { zipkinTraceId, type ZipkinSpan } from "../../shared/tracing";
import { startOtlpCollector, type OtlpCollector } from "../support/otlp-collector";
import { freePort, requireBinary } from "../support/brokers";
import { startCluster, type Cluster } from "../support/cluster";
import { memoryOf } from "../support/processes";
import { heapAfterGc } from "../support/heap-after-gc";
import { eventFields, eventForm, pngBytes } from "../support/upload";

const run = requireBinary("nats-server") && requireBinary("redis-server");
const maybe = run ? describe : describe.skip;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How long a finished span may wait before it is sent, and how many may wait (operators' values). */
const INTERVAL_MS = TRACING_INTERVAL_MS;

interface Collector {
  url: string;
  /** Every request's raw body, to look for credentials in what left the processes. */
  bodies: string[];
  spans: ZipkinSpan[];
  close(): Promise<void>;
}

async function startCollector(): Promise<Collector> {
  const bodies: string[] = [];
  const spans: ZipkinSpan[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      if (req.method === "POST" && req.url === "/api/v2/spans") {
        bodies.push(body);
        spans.push(...(JSON.parse(body) as ZipkinSpan[]));
        res.writeHead(202).end();
      } else {
        res.writeHead(404).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v2/spans`,
    bodies,
    spans,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** The spans of one trace, once `done` says they are all in (or the deadline passed). */
async function traceOf(
  collector: Collector,
  traceId: string,
  done: (spans: ZipkinSpan[]) => boolean,
  timeoutMs = 4 * INTERVAL_MS,
): Promise<ZipkinSpan[]> {
  const deadline = Date.now() + timeoutMs;
  let spans: ZipkinSpan[] = [];
  while (Date.now() < deadline) {
    spans = collector.spans.filter((s) => s.traceId === traceId);
    if (done(spans)) break;
    await sleep(250);
  }
  return spans;
}

/** Every span's parent is a span of the trace, but for exactly one root; ids are unique. */
function expectConnected(spans: ZipkinSpan[]): ZipkinSpan {
  const ids = new Set(spans.map((s) => s.id));
  expect(ids.size).toBe(spans.length);
  const roots = spans.filter((s) => s.parentId === undefined);
  expect(roots).toHaveLength(1);
  for (const s of spans) if (s.parentId !== undefined) expect(ids).toContain(s.parentId);
  return roots[0];
}

const byName = (spans: ZipkinSpan[], name: string) => spans.filter((s) => s.name === name);

/**
 * A `traceOf` condition: the named spans are in, and so is every span's parent. Each process sends its
 * spans on its own timer, so a child (users.profiles, called by rounds) may arrive a batch before its parent.
 */
const complete = (names: string[]) => (spans: ZipkinSpan[]) => {
  const ids = new Set(spans.map((s) => s.id));
  return (
    names.every((n) => byName(spans, n).length > 0) &&
    spans.every((s) => s.parentId === undefined || ids.has(s.parentId))
  );
};

maybe("tracing across processes", () => {
  let collector: Collector;
  let cluster: Cluster;
  let manifest: DemoManifest;
  let metricsPort: number;
  /** The gateway's inspector (the collector-down case reads its heap after a full collection). */
  let inspectPort: number;

  beforeAll(async () => {
    collector = await startCollector();
    metricsPort = await freePort();
    inspectPort = await freePort();
    cluster = await startCluster({
      // Every process but the gateway would trace nothing of its own accord.
      env: { TRACING_ENDPOINT: collector.url, TRACING_SAMPLE_RATE: "0" },
      // The gateway traces every request; its Prometheus metrics show its exporter's queue and counts
      // (the collector-down case).
      processEnv: { gateway: { METRICS_PORT: String(metricsPort), TRACING_SAMPLE_RATE: "1" } },
      nodeArgs: { gateway: [`--inspect=127.0.0.1:${inspectPort}`] },
    });
    manifest = await seed(cluster.client, cluster.baseUrl);
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    await collector?.close();
  });

  const nodeOf = (name: string) => cluster.processes.get(name)!.nodeID;

  it("when one GET /rounds/{id} is sampled in at the gateway, then gateway, rounds, users and stores (each at a rate of 0 itself) send spans of one trace, linked to one root that carries route, status and caller kind, and no credential leaves any process", async () => {
    const requestId = `it-read-${process.pid}-${Date.now()}`;
    const token = manifest.users.alice.access_token;
    const res = await fetch(`${cluster.baseUrl}/rounds/${manifest.rounds.open}`, {
      headers: { authorization: `Bearer ${token}`, "x-request-id": requestId },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBe(requestId);

    // The request id is not hex: its trace id is its hash, the same in every process.
    const traceId = zipkinTraceId(requestId);
    const expected = [
      "GET /rounds/:round_id",
      "action 'users.status'",
      "action 'rounds.get'",
      "action 'users.profiles'",
      "action 'stores.item'",
    ];
    const spans = await traceOf(collector, traceId, complete(expected));
    const names = spans.map((s) => `${s.tags["node.id"]}: ${s.name}`).sort();
    process.stdout.write(`GET /rounds/{id}: ${spans.length} spans in one trace\n  ${names.join("\n  ")}\n`);

    for (const name of expected) expect(byName(spans, name)).toHaveLength(1);
    // Spans came from four different processes, each named by its node and service (the gateway checks
    // a first caller's token itself and asks users, not auth, whether the user is active).
    const nodes = new Set(spans.map((s) => s.tags["node.id"]));
    for (const p of ["gateway", "rounds", "users", "stores"]) expect(nodes).toContain(nodeOf(p));
    expect(byName(spans, "action 'rounds.get'")[0]).toMatchObject({
      localEndpoint: { serviceName: "rounds" },
      tags: { "node.id": nodeOf("rounds") },
    });
    expect(byName(spans, "action 'stores.item'")[0].tags["node.id"]).toBe(nodeOf("stores"));
    expect(byName(spans, "action 'users.profiles'")[0].tags["node.id"]).toBe(nodeOf("users"));

    const root = expectConnected(spans);
    expect(root.name).toBe("GET /rounds/:round_id");
    expect(root.localEndpoint.serviceName).toBe("gateway");
    expect(root.tags).toMatchObject({
      "node.id": nodeOf("gateway"),
      "http.method": "GET",
      "http.route": "GET /rounds/:round_id",
      "http.status_code": "200",
      "caller.kind": "user",
      "request.id": requestId,
    });
    expect(root.tags.error).toBeUndefined();
    // Calls made by the gateway hang off the request's span; the item and profiles off rounds.get.
    const get = byName(spans, "action 'rounds.get'")[0];
    expect(get.parentId).toBe(root.id);
    expect(byName(spans, "action 'users.status'")[0].parentId).toBe(root.id);
    expect(byName(spans, "action 'stores.item'")[0].parentId).toBe(get.id);
    expect(byName(spans, "action 'users.profiles'")[0].parentId).toBe(get.id);

    const everything = collector.bodies.join("\n");
    expect(everything).not.toContain(token);
    expect(everything).not.toContain(token.split(".")[2]);
  }, 60_000);

  it("when a read fails or an API key calls, then the root span carries the status, the error type and the key's scope, never the key", async () => {
    const missing = randomUUID();
    const token = manifest.users.bob.access_token;
    const res = await fetch(`${cluster.baseUrl}/rounds/${randomUUID()}`, {
      headers: { authorization: `Bearer ${token}`, "x-request-id": missing },
    });
    expect(res.status).toBe(404);
    const key = manifest.api_keys.app;
    const keyed = randomUUID();
    const settings = await fetch(`${cluster.baseUrl}/app-settings?version=2.4.0&platform=ios`, {
      headers: { "x-api-key": key, "x-request-id": keyed },
    });
    expect(settings.status).toBe(200);

    // A UUID request id is the trace id as it is, without its dashes.
    expect(zipkinTraceId(missing)).toBe(missing.replace(/-/g, ""));
    const failed = await traceOf(
      collector,
      zipkinTraceId(missing),
      complete(["GET /rounds/:round_id", "action 'rounds.get'"]),
    );
    const root = expectConnected(failed);
    expect(root.tags).toMatchObject({
      "http.route": "GET /rounds/:round_id",
      "http.status_code": "404",
      "caller.kind": "user",
      "error.type": "NOT_FOUND",
    });
    // A 4xx is an answer, not a fault: no `error` tag on the request; the action's span has its error.
    expect(root.tags.error).toBeUndefined();
    expect(byName(failed, "action 'rounds.get'")[0].tags).toMatchObject({
      error: "NOT_FOUND",
      "error.code": "404",
    });

    const withKey = await traceOf(
      collector,
      zipkinTraceId(keyed),
      complete(["GET /app-settings", "action 'auth.verifyApiKey'"]),
    );
    const keyRoot = expectConnected(withKey);
    expect(keyRoot.tags).toMatchObject({
      "http.status_code": "200",
      "caller.kind": "api-key",
      "caller.scope": "app",
    });
    const everything = collector.bodies.join("\n");
    expect(everything).not.toContain(key);
    expect(everything).not.toContain(key.split(".")[2]);
  }, 60_000);

  it("when a store event is created over HTTP, then the rounds span that handles store.event.created and opens its round continues the request's trace (rounds, at a rate of 0 itself, follows the recorded decision)", async () => {
    const requestId = randomUUID();
    const res = await fetch(`${cluster.baseUrl}/stores/${manifest.stores.alice_store}/events`, {
      method: "POST",
      body: eventForm(eventFields({ name: "Traced evening" }), pngBytes()),
      headers: { authorization: `Bearer ${manifest.users.alice.access_token}`, "x-request-id": requestId },
    });
    expect(res.status).toBe(200);
    const event = (await res.json()) as { id: string; round_id: string };

    const consumer = "channel 'store.event.created' in 'rounds'";
    const spans = await traceOf(
      collector,
      zipkinTraceId(requestId),
      complete([consumer, "action 'stores.createEvent'", "POST /stores/:store_id/events"]),
    );
    process.stdout.write(
      `POST /stores/{id}/events: ${spans.length} spans in one trace\n  ${spans
        .map((s) => `${s.tags["node.id"]}: ${s.name}`)
        .sort()
        .join("\n  ")}\n`,
    );
    const root = expectConnected(spans);
    expect(root.name).toBe("POST /stores/:store_id/events");
    const handled = byName(spans, consumer);
    expect(handled).toHaveLength(1);
    const create = byName(spans, "action 'stores.createEvent'")[0];
    expect(create.tags["node.id"]).toBe(nodeOf("stores"));
    expect(handled[0]).toMatchObject({
      kind: "CONSUMER",
      parentId: create.id,
      localEndpoint: { serviceName: "rounds" },
      tags: { "node.id": nodeOf("rounds"), "channel.group": "rounds", "request.id": requestId },
    });
    expect(handled[0].tags.error).toBeUndefined();

    // The span is the handling that opened the round.
    const round = await fetch(`${cluster.baseUrl}/rounds/${event.round_id}`, {
      headers: { authorization: `Bearer ${manifest.users.alice.access_token}` },
    });
    expect(round.status).toBe(200);
  }, 60_000);

  it("when the collector is down, then every request still succeeds, the gateway's memory stays flat and its log has one warning, not one per batch", async () => {
    await collectorDown({
      cluster,
      manifest,
      metricsPort,
      inspectPort,
      closeCollector: () => collector.close(),
      // Each failed batch takes what waits behind it (decision 0063): the queue is empty again.
      queuedBelow: 100,
      heldAtMost: 0,
    });
  }, 180_000);

  it("when a caller's traceparent says not sampled, then no process sends a span of the request, though the gateway's rate is 1", async () => {
    const traceId = randomUUID().replace(/-/g, "");
    const res = await fetch(`${cluster.baseUrl}/rounds/${manifest.rounds.open}`, {
      headers: {
        authorization: `Bearer ${manifest.users.alice.access_token}`,
        traceparent: `00-${traceId}-${CALLER_SPAN}-00`,
      },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("traceparent")).toBeNull();
    await sleep(INTERVAL_MS + 1000);
    expect(collector.spans.filter((s) => s.traceId === traceId)).toEqual([]);
  }, 60_000);
});

/** A span id of the caller's: the ingress's span that called the gateway. */
const CALLER_SPAN = "00f067aa0ba902b7";

/**
 * The collector-down case for either exporter: a warm-up that leaves the exporter holding all it may,
 * then three rounds of traced reads, 9,000 more than it may hold, while the collector is gone. Every
 * request succeeds, the gateway's memory stays flat, spans are dropped rather than held (its queue below
 * `queuedBelow`) and its log has one warning for the whole outage.
 */
async function collectorDown(opts: {
  cluster: Cluster;
  manifest: DemoManifest;
  metricsPort: number;
  inspectPort: number;
  closeCollector: () => Promise<void>;
  queuedBelow: number;
  /** Spans the exporter may still hold after the outage's last round (queued, or in a batch being tried). */
  heldAtMost: number;
  /** Headers each read sends besides its token and request id (a caller's trace context). */
  headers?: () => Record<string, string>;
}): Promise<void> {
  const { cluster, manifest, metricsPort, inspectPort } = opts;

  const gateway = cluster.processes.get("gateway")!;
  const pid = gateway.child!.pid!;
  await opts.closeCollector();
  const users = [manifest.users.alice, manifest.users.bob, ...manifest.users.crowd.slice(0, 8)];
  const rounds = [manifest.rounds.open];
  let failures = 0;
  let served = 0;
  /** `n` reads by ten users, sixteen at a time. */
  const burst = async (n: number) => {
    let next = 0;
    const worker = async () => {
      while (next < n) {
        const i = next++;
        const user = users[i % users.length];
        const res = await fetch(`${cluster.baseUrl}/rounds/${rounds[0]}`, {
          headers: {
            authorization: `Bearer ${user.access_token}`,
            "x-request-id": `down-${i}`,
            ...opts.headers?.(),
          },
        }).catch(() => null);
        if (res?.status === 200) served++;
        else failures++;
        await res?.arrayBuffer();
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
  };
  /** The gateway exporter's own view: spans waiting, sent, dropped (tracing_spans_* at /metrics). */
  const exporterOf = async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const value = (name: string) =>
      Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, "m").exec(text)?.[1] ?? NaN);
    return {
      queued: value("tracing_spans_queued"),
      exported: value("tracing_spans_exported_total"),
      dropped: value("tracing_spans_dropped_total"),
    };
  };
  const sample = async () => ({
    rss: memoryOf(pid).rss,
    heap: await heapAfterGc(inspectPort),
    ...(await exporterOf()),
  });
  const mb = (b: number) => `${(b / 2 ** 20).toFixed(1)} MB`;

  // Warm up (connections, JIT, caches, and what the exporter may hold), then let a batch fail: the
  // outage has begun.
  const warmUp = 1000 + opts.heldAtMost;
  const perRound = Math.ceil((9000 + opts.heldAtMost) / 3);
  await burst(warmUp);
  await sleep(INTERVAL_MS + 1000);
  const before = await sample();
  const samples: Array<Awaited<ReturnType<typeof sample>>> = [];
  const started = Date.now();
  for (let round = 0; round < 3; round++) {
    await burst(perRound);
    // Past the next batch: what the round finished has been tried and dropped.
    await sleep(INTERVAL_MS + 1000);
    samples.push(await sample());
  }
  const after = samples[samples.length - 1];
  process.stdout.write(
    `collector down: ${served} reads served, ${failures} failed in ${Date.now() - started} ms; gateway RSS ${mb(before.rss)} → ${samples.map((s) => mb(s.rss)).join(" → ")}, heap ${mb(before.heap)} → ${samples.map((s) => mb(s.heap)).join(" → ")}\n`,
  );
  process.stdout.write(
    `gateway exporter: queued ${[before, ...samples].map((s) => s.queued).join(" → ")}, exported ${after.exported}, dropped ${before.dropped} → ${samples.map((s) => s.dropped).join(" → ")}\n`,
  );
  expect(failures).toBe(0);
  expect(served).toBe(warmUp + 3 * perRound);
  // Nothing more than `heldAtMost` is held for the dead collector: the spans of the rounds' reads (at
  // least one each) were dropped but for those, and the queue stayed within its bound.
  expect(after.dropped - before.dropped).toBeGreaterThanOrEqual(3 * perRound - opts.heldAtMost);
  for (const s of [before, ...samples]) expect(s.queued).toBeLessThan(opts.queuedBelow);
  expect(after.exported).toBeGreaterThan(0);
  // Flat: the rounds' requests leave nothing behind. The heap is read after a full collection, so
  // what remains is what the gateway still reaches; the RSS also holds what the collector has not
  // given back to the system yet.
  expect(after.rss - before.rss).toBeLessThan(40 * 2 ** 20);
  expect(after.heap - before.heap).toBeLessThan(8 * 2 ** 20);

  const log = fs.readFileSync(gateway.logFile, "utf8");
  const warnings = log.split("\n").filter((l) => l.includes("Spans could not be sent"));
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain("ECONNREFUSED");
}

maybe("trace sampling decided at the gateway", () => {
  let collector: Collector;
  let cluster: Cluster;
  let manifest: DemoManifest;

  beforeAll(async () => {
    collector = await startCollector();
    cluster = await startCluster({
      // Every process but the gateway would trace everything of its own accord; the gateway nothing.
      env: { TRACING_ENDPOINT: collector.url, TRACING_SAMPLE_RATE: "1" },
      processEnv: { gateway: { TRACING_SAMPLE_RATE: "0" } },
    });
    manifest = await seed(cluster.client, cluster.baseUrl);
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    await collector?.close();
  });

  const traced = (requestId: string) =>
    collector.spans.filter(
      (s) => s.traceId === zipkinTraceId(requestId) || s.tags["request.id"] === requestId,
    );

  it("when a read, a join and a store event are sampled out at the gateway, then no process sends a span of their traces, not even the consumers of their facts, while work no request started is traced at the services' own rate", async () => {
    const alice = manifest.users.alice.access_token;
    const read = randomUUID();
    const join = randomUUID();
    const upload = randomUUID();
    const headers = (id: string) => ({ authorization: `Bearer ${alice}`, "x-request-id": id });
    expect(
      (await fetch(`${cluster.baseUrl}/rounds/${manifest.rounds.open}`, { headers: headers(read) })).status,
    ).toBe(200);
    const joined = await fetch(`${cluster.baseUrl}/rounds/${manifest.rounds.free}/join`, {
      method: "POST",
      headers: { ...headers(join), "content-type": "application/json" },
      body: "{}",
    });
    expect(joined.status).toBeLessThan(500);
    const created = await fetch(`${cluster.baseUrl}/stores/${manifest.stores.alice_store}/events`, {
      method: "POST",
      body: eventForm(eventFields({ name: "Untraced evening" }), pngBytes()),
      headers: headers(upload),
    });
    expect(created.status).toBe(200);
    // A call no request started (from the test's own node, at the services' rate of 1) is traced: the
    // silence above is the services following the gateway, not tracing that is off.
    const control = randomUUID();
    await cluster.client.call("settings.ready", {}, { requestID: control });
    await traceOf(collector, zipkinTraceId(control), (s) => s.length > 0);
    expect(traced(control).length).toBeGreaterThan(0);

    // The facts are handled (the event's round is opened) and two batches have gone out since.
    await sleep(2 * INTERVAL_MS + 1000);
    for (const id of [read, join, upload])
      expect({ request: id, spans: traced(id) }).toEqual({ request: id, spans: [] });
  }, 60_000);

  it("when a caller's traceparent says sampled, then gateway and rounds send spans of the caller's trace, though the gateway's rate is 0, the gateway's span a child of the caller's", async () => {
    const traceId = randomUUID().replace(/-/g, "");
    const res = await fetch(`${cluster.baseUrl}/rounds/${manifest.rounds.open}`, {
      headers: {
        authorization: `Bearer ${manifest.users.alice.access_token}`,
        traceparent: `00-${traceId}-${CALLER_SPAN}-01`,
      },
    });
    expect(res.status).toBe(200);
    // The round was read before in this cluster: rounds answers from its cache, without asking stores.
    const expected = ["GET /rounds/:round_id", "action 'rounds.get'"];
    const spans = await traceOf(collector, traceId, complete(expected));
    const root = byName(spans, "GET /rounds/:round_id")[0];
    expect(root.parentId).toBe(CALLER_SPAN);
    expect(res.headers.get("traceparent")).toBe(`00-${traceId}-${root.id}-01`);
    const nodes = new Set(spans.map((s) => s.tags["node.id"]));
    for (const p of ["gateway", "rounds"]) expect(nodes).toContain(cluster.processes.get(p)!.nodeID);
    // One tree below the caller's span.
    const ids = new Set(spans.map((s) => s.id));
    for (const s of spans) expect(s === root || ids.has(s.parentId!)).toBe(true);
  }, 60_000);

  it("when a request sampled out is answered 5xx, then the gateway's span of it is sent alone, marked as kept for the error, and no other process sends one", async () => {
    const bob = manifest.users.bob.access_token;
    await cluster.processes.get("stores")!.stop();
    const requestId = randomUUID();
    const res = await fetch(`${cluster.baseUrl}/stores/${manifest.stores.alice_store}/events`, {
      method: "POST",
      body: eventForm(eventFields({ name: "Refused evening" }), pngBytes()),
      headers: { authorization: `Bearer ${bob}`, "x-request-id": requestId },
    });
    expect(res.status).toBe(503);

    const spans = await traceOf(collector, zipkinTraceId(requestId), (s) => s.length > 0);
    // Whatever else could come (users asked whether bob is active, which it would trace itself) has had a batch.
    await sleep(INTERVAL_MS + 1000);
    expect(traced(requestId)).toHaveLength(1);
    expect(spans[0]).toMatchObject({
      name: "POST /stores/:store_id/events",
      localEndpoint: { serviceName: "gateway" },
      tags: {
        "http.status_code": "503",
        "sampling.kept": "5xx",
        error: expect.any(String),
        "request.id": requestId,
      },
    });
    expect(spans[0].parentId).toBeUndefined();
  }, 60_000);
});

maybe("tracing across processes over OTLP", () => {
  let collector: OtlpCollector;
  let cluster: Cluster;
  let manifest: DemoManifest;
  let metricsPort: number;
  let inspectPort: number;
  /** The gateway's queue: what it holds while the collector is down is at most this. */
  const QUEUE = TRACING_QUEUE_SIZE;

  beforeAll(async () => {
    collector = await startOtlpCollector();
    metricsPort = await freePort();
    inspectPort = await freePort();
    cluster = await startCluster({
      // No process traces of its own accord: only a caller's "sampled" does.
      env: { TRACING_ENDPOINT: collector.url, TRACING_SAMPLE_RATE: "0" },
      processEnv: { gateway: { METRICS_PORT: String(metricsPort) } },
      nodeArgs: { gateway: [`--inspect=127.0.0.1:${inspectPort}`] },
    });
    manifest = await seed(cluster.client, cluster.baseUrl);
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    await collector?.close();
  });

  it("when a caller's traceparent says sampled, then the collector decodes OTLP spans of the caller's trace from gateway, rounds, users and stores, each process its resource, the gateway's span a child of the caller's, and no credential", async () => {
    const traceId = randomUUID().replace(/-/g, "");
    const token = manifest.users.alice.access_token;
    const res = await fetch(`${cluster.baseUrl}/rounds/${manifest.rounds.open}`, {
      headers: { authorization: `Bearer ${token}`, traceparent: `00-${traceId}-${CALLER_SPAN}-01` },
    });
    expect(res.status).toBe(200);
    const deadline = Date.now() + 4 * INTERVAL_MS;
    const ofTrace = () => collector.spans.filter((s) => s.traceId === traceId);
    const services = () => new Set(ofTrace().map((s) => s.resource["service.name"]));
    while (Date.now() < deadline && !["gateway", "rounds", "users", "stores"].every((n) => services().has(n)))
      await sleep(250);
    const spans = ofTrace();
    expect([...services()].sort()).toEqual(expect.arrayContaining(["gateway", "rounds", "stores", "users"]));
    const root = spans.find((s) => s.name === "GET /rounds/:round_id")!;
    expect(root).toMatchObject({ parentSpanId: CALLER_SPAN, kind: 2 });
    expect(root.attributes).toMatchObject({ "http.status_code": 200, "caller.kind": "user" });
    expect(res.headers.get("traceparent")).toBe(`00-${traceId}-${root.spanId}-01`);
    for (const p of ["gateway", "rounds", "stores", "users"]) {
      const span = spans.find((s) => s.resource["service.name"] === p)!;
      expect(span.resource["service.instance.id"]).toBe(cluster.processes.get(p)!.nodeID);
      expect(span.attributes["node.id"]).toBe(cluster.processes.get(p)!.nodeID);
    }
    const ids = new Set(spans.map((s) => s.spanId));
    for (const s of spans) if (s !== root) expect(ids).toContain(s.parentSpanId);
    const everything = collector.bodies.join("\n");
    expect(everything).not.toContain(token);
    expect(everything).not.toContain(token.split(".")[2]);
  }, 60_000);

  it("when the collector is down, then every request still succeeds, the gateway's memory stays flat, its queue within its bound, and its log has one warning", async () => {
    await collectorDown({
      cluster,
      manifest,
      metricsPort,
      inspectPort,
      closeCollector: () => collector.close(),
      // OpenTelemetry's processor keeps what waits behind a failed batch, up to the queue's bound.
      queuedBelow: QUEUE + 1,
      // A full queue, and a batch of 1,000 being retried until its time-out.
      heldAtMost: QUEUE + 1000,
      headers: () => ({ traceparent: `00-${randomUUID().replace(/-/g, "")}-${CALLER_SPAN}-01` }),
    });
  }, 300_000);
});
