/**
 * A rolling update of the gateway as an orchestrator does it: compose's services in containers
 * (test/deploy/support/deployment.ts), two gateway containers behind a real load balancer (HAProxy,
 * test/deploy/support/haproxy.ts: routing by `/health/ready`, never retrying a request elsewhere, as
 * kube-proxy), paced clients reading, joining and refreshing through it, and each gateway in turn
 * stopped (`podman stop`: SIGTERM, then a grace above its delay and bound) and started again. No request
 * may fail: on SIGTERM a gateway reports not ready at once and serves SHUTDOWN_DELAY_MS more, which is
 * longer than the balancer takes to stop routing to it, then drains (services/gateway/drain.ts).
 */
import fs from "node:fs";
import path from "node:path";
import type { DemoManifest, ManifestUser } from "../../shared/ops/seed";
import { CLOSE_MARGIN_MS } from "../../shared/runtime/shutdown";
import { root } from "../support/processes";
import { log } from "./global-setup";
import { planCompose, requiredVariables, variableValues, opsCliEnv } from "./support/compose";
import { Deployment } from "./support/deployment";
import { CHECK, LoadBalancer } from "./support/haproxy";
import type { Images } from "./support/images";
import { SERVICE_RUNTIME } from "./support/images";
import { podman, removeContainers, runId } from "./support/podman";

const skip = process.env.ROUNDS_DEPLOY_SKIP;
const maybe = skip ? describe.skip : describe;
const MINUTE = 60_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Longer than the balancer takes to see the 503 (FALL checks, INTER_MS apart), with a margin. */
const SHUTDOWN_DELAY_MS = CHECK.INTER_MS * CHECK.FALL + 3000;
/** compose's default, SHUTDOWN_TIMEOUT_MS. */
const SHUTDOWN_TIMEOUT_MS = 10_000;
/** `podman stop`'s grace before SIGKILL: above everything the stop may take. */
const STOP_GRACE_S = Math.ceil((SHUTDOWN_DELAY_MS + SHUTDOWN_TIMEOUT_MS + CLOSE_MARGIN_MS) / 1000) + 5;

interface Outcome {
  kind: "read" | "join" | "refresh";
  sentAt: number;
  ms: number;
  /** 0: no whole answer came (refused, reset, cut in the middle of its body, timed out). */
  status: number;
  /** The gateway HAProxy sent it to. */
  server: string;
  error?: string;
}

/** One request: its status, the gateway that answered, and its body read to the end. */
async function send(
  url: string,
  init: RequestInit,
): Promise<Omit<Outcome, "kind" | "sentAt" | "ms"> & { body: unknown }> {
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
    const server = res.headers.get("x-served-by") ?? "";
    const text = await res.text();
    try {
      return { status: res.status, server, body: JSON.parse(text) as unknown };
    } catch {
      // HAProxy's own answers (502, 503 when no gateway is routed to) are HTML.
      return { status: res.status, server, body: null, error: `not JSON: ${text.slice(0, 80)}` };
    }
  } catch (err) {
    const e = err as { name?: string; cause?: { code?: string } };
    return { status: 0, server: "", body: null, error: e.cause?.code ?? e.name ?? "error" };
  }
}

/** A client that sends `next()` every `thinkMs` until stopped, every outcome recorded. */
function pacedClient(
  outcomes: Outcome[],
  kind: Outcome["kind"],
  thinkMs: number,
  next: () => { url: string; init: RequestInit; answered?: (status: number, body: unknown) => void },
) {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const sentAt = Date.now();
      const { url, init, answered } = next();
      const { body, ...outcome } = await send(url, init);
      outcomes.push({ kind, sentAt, ms: Date.now() - sentAt, ...outcome });
      answered?.(outcome.status, body);
      await sleep(thinkMs);
    }
  })();
  return async () => {
    stopped = true;
    await loop;
  };
}

let deployment: Deployment;
let manifest: DemoManifest;
let balancer: LoadBalancer;
const gateways = ["gateway", "gateway-2"];

maybe(`a rolling update of two gateways behind HAProxy${skip ? ` (${skip})` : ""}`, () => {
  beforeAll(async () => {
    const images = JSON.parse(process.env.ROUNDS_DEPLOY_IMAGES ?? "null") as Images;
    const file = path.join(root, "docker-compose.yml");
    const vars = variableValues(requiredVariables(fs.readFileSync(file, "utf8")));
    const plan = planCompose(file, vars, SERVICE_RUNTIME.env.DATA_DIR);
    const gateway = plan.containers.find((c) => c.service === "gateway");
    if (!gateway) throw new Error("docker-compose.yml has no gateway service");
    gateway.env.SHUTDOWN_DELAY_MS = String(SHUTDOWN_DELAY_MS);
    gateway.env.SHUTDOWN_TIMEOUT_MS = String(SHUTDOWN_TIMEOUT_MS);
    // For this run only: every client reaches the gateways through HAProxy, from one address, so the
    // per-address limit would count all of them as one client. The per-user RATE_LIMITS stay on.
    gateway.env.ADDRESS_RATE_LIMIT = "0";
    deployment = new Deployment(plan, images, log, opsCliEnv(vars));
    await deployment.start();
    await deployment.run(gateway, "gateway-2");
    await deployment.waitReady("gateway-2");
    manifest = JSON.parse(await deployment.ctl(["seed"])) as DemoManifest;
    balancer = new LoadBalancer(
      await Promise.all(
        gateways.map(async (g) => ({ name: g, address: await deployment.address(g), port: 3000 })),
      ),
    );
    await balancer.start();
  }, 15 * MINUTE);

  afterAll(async () => {
    await balancer?.stop();
    removeContainers(runId());
  }, 5 * MINUTE);

  it(
    "when each gateway in turn is stopped (SIGTERM) and started again under paced reads, joins and refreshes through HAProxy, then no request fails and both serve throughout",
    async () => {
      const base = balancer.url;
      const outcomes: Outcome[] = [];
      const bearer = (u: ManifestUser | { access_token: string }) => ({
        authorization: `Bearer ${u.access_token}`,
      });
      const stops: Array<() => Promise<void>> = [];
      // Reads: 4 clients, a read every 100 ms each (reads have no per-user limit).
      for (let i = 0; i < 4; i++) {
        stops.push(
          pacedClient(outcomes, "read", 100, () => ({
            url: `${base}/rounds/${manifest.rounds.open}`,
            init: { headers: bearer(manifest.users.bob) },
          })),
        );
      }
      // Joins: 4 users joining the free round, each every 700 ms (under RATE_LIMITS' 120 a minute);
      // a member's join again is answered 200 as the first.
      for (const user of manifest.users.crowd.slice(5, 9)) {
        stops.push(
          pacedClient(outcomes, "join", 700, () => ({
            url: `${base}/rounds/${manifest.rounds.free}/join`,
            init: {
              method: "POST",
              headers: { ...bearer(user), "content-type": "application/json" },
              body: JSON.stringify({ attributes: [] }),
            },
          })),
        );
      }
      // Refreshes: 2 sign-ins of their own, each every 1.1 s (under RATE_LIMITS' 60 a minute), each
      // going on with the pair it was last given.
      for (const user of manifest.users.crowd.slice(20, 22)) {
        const set = JSON.parse(await deployment.ctl(["token", user.id])) as {
          access_token: string;
          refresh_token: string;
        };
        let pair = set;
        stops.push(
          pacedClient(outcomes, "refresh", 1100, () => ({
            url: `${base}/auth/refresh-token`,
            init: {
              method: "POST",
              headers: { ...bearer(pair), "content-type": "application/json" },
              body: JSON.stringify({ refresh_token: pair.refresh_token }),
            },
            answered: (status, body) => {
              if (status === 200) pair = body as typeof pair;
            },
          })),
        );
      }

      const started = Date.now();
      await sleep(3000);
      const steps: string[] = [];
      const restartedAt: Record<string, number> = {};
      for (const g of gateways) {
        const at = Date.now();
        await podman(["stop", "-t", String(STOP_GRACE_S), deployment.container(g)], {
          timeoutMs: (STOP_GRACE_S + 30) * 1000,
        });
        const stoppedMs = Date.now() - at;
        const exitCode = await deployment.inspect(g, "{{.State.ExitCode}}");
        await podman(["start", deployment.container(g)]);
        const readyMs = await deployment.waitReady(g);
        const routedMs = await balancer.waitUp([g]);
        restartedAt[g] = Date.now();
        steps.push(
          `${g}: stopped in ${stoppedMs} ms (exit ${exitCode}), ready ${readyMs} ms after start, routed ${routedMs} ms later`,
        );
        expect(exitCode).toBe("0");
        expect(stoppedMs).toBeGreaterThanOrEqual(SHUTDOWN_DELAY_MS);
        await sleep(3000);
      }
      // The clients stop together; what they answer while stopping is not counted as the run.
      const ended = Date.now();
      await Promise.all(stops.map((stop) => stop()));

      const failed = outcomes.filter((o) => o.status !== 200 || o.error !== undefined);
      const byKind = (kind: Outcome["kind"]) => outcomes.filter((o) => o.kind === kind).length;
      // Served throughout: every second of the run has answers, and each gateway answered again after
      // its restart.
      const silentSeconds: number[] = [];
      for (let s = started; s + 1000 <= ended; s += 1000) {
        if (!outcomes.some((o) => o.status === 200 && o.sentAt + o.ms >= s && o.sentAt + o.ms < s + 1000))
          silentSeconds.push(Math.round((s - started) / 1000));
      }
      const servedAfterRestart = gateways.map(
        (g) => outcomes.filter((o) => o.server === g && o.sentAt >= restartedAt[g]).length,
      );
      log(
        `rolling update: ${outcomes.length} requests (${byKind("read")} reads, ${byKind("join")} joins, ` +
          `${byKind("refresh")} refreshes) over ${Math.round((ended - started) / 1000)} s, ${failed.length} failed; ` +
          `${steps.join("; ")}; answered after its restart: ${gateways.map((g, i) => `${g} ${servedAfterRestart[i]}`).join(", ")}`,
      );
      expect(failed).toEqual([]);
      expect(silentSeconds).toEqual([]);
      for (const n of servedAfterRestart) expect(n).toBeGreaterThan(0);
    },
    10 * MINUTE,
  );
});
