/**
 * A full disk under one service process of a distributed deployment: the rounds process's store
 * refuses its writes (test/support/failing-writes-preload.js, switched on and off by a file in its data
 * folder), and its StoreWriteError crosses NATS to the gateway, which answers 507 with the detail that
 * says why, every time: neither the circuit breaker (calls failing for want of a writable store do not
 * count against the node) nor the transporter turns it into a 503 or a 500. The process counts each
 * failure on its own /metrics and logs one line naming the store and its file; once the disk works,
 * joins succeed again.
 */
import fs from "node:fs";
import path from "node:path";
import { seed, type DemoManifest } from "../../shared/ops/seed";
import { dbDir } from "../../shared/storage";
import { freePort, requireBinary } from "../support/brokers";
import { startCluster, type Cluster } from "../support/cluster";
import { api, newUser } from "../support/system";

const run = requireBinary("nats-server") && requireBinary("redis-server");
const maybe = run ? describe : describe.skip;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const preload = path.resolve(__dirname, "../support/failing-writes-preload.js");

maybe("a full disk under the rounds process of a cluster", () => {
  let cluster: Cluster;
  let manifest: DemoManifest;
  let metricsPort: number;

  beforeAll(async () => {
    metricsPort = await freePort();
    cluster = await startCluster({
      store: "embedded",
      nodeArgs: { rounds: ["--require", preload] },
      processEnv: { rounds: { METRICS_PORT: String(metricsPort), LOG_LEVEL: "warn" } },
    });
    manifest = await seed(cluster.client, cluster.baseUrl);
  }, 120_000);
  afterAll(() => cluster?.stop());

  it("when its disk is full, then 30 joins in a row through the gateway are each answered 507 saying storage is full, counted on the process's /metrics and logged once; once space is freed, joins succeed again", async () => {
    const rounds = cluster.processes.get("rounds")!;
    const trigger = path.join(rounds.dataDir, "fail-writes");
    const users = await Promise.all(Array.from({ length: 30 }, () => newUser(cluster.client, "full-disk")));
    const join = (token: string) =>
      api(cluster, "POST", `/rounds/${manifest.rounds.open}/join`, { token, json: null });

    fs.writeFileSync(trigger, "ENOSPC");
    try {
      // More than the circuit breaker's 20 calls: a breaker counting them would answer 503 by now.
      for (const user of users) {
        const res = await join(user.access_token);
        expect({ status: res.status, body: res.body }).toEqual({
          status: 507,
          body: {
            detail: "Insufficient storage: the server's storage is full, so the change could not be saved",
          },
        });
      }
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const series = metrics
        .split("\n")
        .find(
          (l) =>
            /^store_write_errors_total\{/.test(l) &&
            l.includes('store="rounds"') &&
            l.includes('code="ENOSPC"'),
        );
      expect(Number(series?.split(" ").pop())).toBeGreaterThanOrEqual(30);
    } finally {
      fs.rmSync(trigger, { force: true });
    }

    let res = await join(users[0].access_token);
    for (const deadline = Date.now() + 5000; res.status === 507 && Date.now() < deadline;) {
      await sleep(200);
      res = await join(users[0].access_token);
    }
    expect(res.status).toBe(200);
    await sleep(200); // the recovery line is written by the rounds process
    const log = fs.readFileSync(rounds.logFile, "utf8");
    const failing = log.split("\n").filter((l) => l.includes("Store writes fail: rounds ("));
    expect(failing).toHaveLength(1);
    expect(failing[0]).toContain(path.join(dbDir({ dataDir: rounds.dataDir }), "rounds.db"));
    expect(log.split("\n").filter((l) => l.includes("Store writes succeed again: rounds ("))).toHaveLength(1);
    expect(log).not.toMatch(/Internal Server Error/);
  });
});
