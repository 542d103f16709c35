/**
 * The cluster with every hook into a library's internals forced off (INTERNALS_HOOKS_OFF=all): each
 * library then works its own way, which must still serve correctly. Over NATS that is nats.js's own
 * dialling (no nats-abandoned-dials); a killed process's calls are retried once its silence is noticed,
 * as they always are (Moleculer's heartbeats).
 */
import fs from "node:fs";
import { seed, type DemoManifest } from "../../shared/ops/seed";
import { requireBinary } from "../support/brokers";
import { startCluster, type Cluster } from "../support/cluster";
import { NO_GATEWAY_CACHES, readsAcrossKill } from "../support/steady-reads";

const run = requireBinary("nats-server") && requireBinary("redis-server");
const maybe = run ? describe : describe.skip;

maybe("the cluster with every internals hook forced off", () => {
  let cluster: Cluster;
  let manifest: DemoManifest;

  beforeAll(async () => {
    cluster = await startCluster({
      replicas: { auth: 2 },
      env: { ...NO_GATEWAY_CACHES, INTERNALS_HOOKS_OFF: "all" },
    });
    manifest = await seed(cluster.client, cluster.baseUrl);
  }, 120_000);
  afterAll(() => cluster?.stop());

  it("when it has started, then every process says which hooks it leaves off, none announces anything in its metadata, and reads are served", async () => {
    const log = (name: string) => fs.readFileSync(cluster.processes.get(name)!.logFile, "utf8");
    for (const name of ["gateway", "rounds", "auth"]) {
      expect(log(name)).toMatch(
        /Internals hook 'nats-abandoned-dials' not applied \(forced off by INTERNALS_HOOKS_OFF\)/,
      );
    }
    for (const p of cluster.processes.values()) {
      expect(cluster.client.registry.nodes.get(p.nodeID)?.metadata).toEqual({});
    }
    const url = `${cluster.baseUrl}/rounds/${manifest.rounds.open}`;
    const headers = { authorization: `Bearer ${manifest.users.alice.access_token}` };
    const answers = await Promise.all(Array.from({ length: 50 }, () => fetch(url, { headers })));
    expect(answers.map((r) => r.status)).toEqual(Array(50).fill(200));
    const round = (await answers[0].json()) as { id: string };
    expect(round.id).toBe(manifest.rounds.open);
  });

  it("when one auth process is killed (-9) under steady reads, then heartbeats alone take it out of rotation: fewer than 1% fail and full service is back within 8 s", async () => {
    const url = `${cluster.baseUrl}/rounds/${manifest.rounds.open}`;
    const headers = { authorization: `Bearer ${manifest.users.alice.access_token}` };
    const { outcomes, failed, slow, killedAt, fullServiceAt } = await readsAcrossKill(url, headers, () =>
      cluster.processes.get("auth#2")!.kill(),
    );
    expect(outcomes.length).toBeGreaterThan(500);
    expect(failed.length / outcomes.length).toBeLessThan(0.01);
    process.stdout.write(
      `hooks off, kill -9 of one auth process: ${failed.length} of ${outcomes.length} reads failed, ${slow.length} waited over 1 s; full service ${fullServiceAt - killedAt} ms after the kill\n`,
    );
    // Moleculer drops a node silent for heartbeatTimeout (2 s), checked every such period: 3-5 s.
    expect(fullServiceAt - killedAt).toBeLessThanOrEqual(8000);
    expect((await fetch(`${cluster.baseUrl}/health/ready`)).status).toBe(200);
  }, 90_000);
});
