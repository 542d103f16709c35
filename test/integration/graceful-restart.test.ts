/**
 * A rolling restart as an orchestrator does it: SIGTERM to a service process under steady reads, wait
 * for its exit, start it again. The process must stop taking new calls at once (the other nodes are
 * told first), finish the ones it has, exit 0; the gateway answers what it cannot route with the spec's
 * 503, never a 500 or a dropped connection.
 */
import { seed, type DemoManifest } from "../../shared/ops/seed";
import { requireBinary } from "../support/brokers";
import { startCluster, type Cluster } from "../support/cluster";
import { NO_GATEWAY_CACHES, steadyReads, type ReadOutcome } from "../support/steady-reads";

const run = requireBinary("nats-server") && requireBinary("redis-server");
const maybe = run ? describe : describe.skip;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Counts of outcomes by status (0: no answer), e.g. "200: 310, 503: 12". */
const byStatus = (list: ReadOutcome[]) => {
  const counts = new Map<number, number>();
  for (const o of list) counts.set(o.status, (counts.get(o.status) ?? 0) + 1);
  const parts = Array.from(counts.entries())
    .sort(([a], [b]) => a - b)
    .map(([status, n]) => `${status}: ${n}`);
  return parts.join(", ") || "none";
};

maybe("a service process restarted with SIGTERM under load", () => {
  let cluster: Cluster;
  let manifest: DemoManifest;

  beforeAll(async () => {
    cluster = await startCluster({ env: NO_GATEWAY_CACHES });
    manifest = await seed(cluster.client, cluster.baseUrl);
  }, 120_000);
  afterAll(() => cluster?.stop());

  it("when the rounds process gets SIGTERM under steady reads and is started again, then it exits 0, no read it had taken fails, and reads in the gap are answered 200 or 503, never 500 or a dropped connection", async () => {
    const url = `${cluster.baseUrl}/rounds/${manifest.rounds.open}`;
    const headers = { authorization: `Bearer ${manifest.users.alice.access_token}` };
    const reads = steadyReads(url, headers);
    const { outcomes } = reads;
    await sleep(1500);
    expect(outcomes.length).toBeGreaterThan(0);
    expect(outcomes.every((o) => o.status === 200)).toBe(true);

    const rounds = cluster.processes.get("rounds")!;
    const signalAt = Date.now();
    await rounds.stop(); // SIGTERM, then waits for the exit
    const exitedAt = Date.now();
    const exitCode = rounds.child!.exitCode;
    expect(rounds.child!.signalCode).toBeNull();
    expect(exitCode).toBe(0);

    rounds.start();
    let backAt = 0;
    while (!backAt && Date.now() - exitedAt < 30_000) {
      const ok = await cluster.client
        .call("rounds.ready", {}, { nodeID: rounds.nodeID, timeout: 500, retries: 0 })
        .then(
          () => true,
          () => false,
        );
      if (ok) backAt = Date.now();
      else await sleep(50);
    }
    expect(backAt).toBeGreaterThan(0);
    // Full service: the last 80 reads (ten per reader) sent after the restart all answered 200.
    let fullAt = 0;
    while (!fullAt && Date.now() - backAt < 30_000) {
      await sleep(200);
      const recent = outcomes.filter((o) => o.sentAt > backAt).slice(-80);
      if (recent.length === 80 && recent.every((o) => o.status === 200)) fullAt = Date.now();
    }
    await reads.stop();
    expect(fullAt).toBeGreaterThan(0);

    // Sent before the signal: the ones rounds had taken are served to the end (Moleculer waits for them
    // before it disconnects). A read still on its way (authentication first) when the gateway learnt
    // rounds was leaving is never routed to it and gets 503, as is one refused by rounds once stopping.
    const before = outcomes.filter((o) => o.sentAt < signalAt);
    const inFlight = before.filter((o) => o.sentAt + o.ms >= signalAt);
    const gap = outcomes.filter((o) => o.sentAt >= signalAt && o.sentAt < backAt);
    const after = outcomes.filter((o) => o.sentAt >= backAt);
    // The first read answered 200 by the new process (the gap's early 200s came from the old one).
    const firstOkAfter = Math.min(
      ...outcomes.filter((o) => o.sentAt >= exitedAt && o.status === 200).map((o) => o.sentAt + o.ms),
    );
    process.stdout.write(
      [
        `SIGTERM of rounds under steady reads: ${outcomes.length} reads`,
        `  sent before the signal: ${before.length} (${byStatus(before)}); of them in flight at the signal: ${inFlight.length} (${byStatus(inFlight)})`,
        `  sent in the gap (signal → rounds ready again): ${gap.length} (${byStatus(gap)})`,
        `  sent after rounds was back: ${after.length} (${byStatus(after)})`,
        `  stop ${exitedAt - signalAt} ms (exit code ${exitCode}), start ${backAt - exitedAt} ms, first read served again ${firstOkAfter - signalAt} ms after the signal, full service ${fullAt - signalAt} ms after the signal`,
        `  slowest read ${outcomes.reduce((max, o) => Math.max(max, o.ms), 0)} ms`,
        "",
      ].join("\n"),
    );

    // Never a 500, a timeout or a connection that failed: only 200 or the spec's 503.
    const unexpected = outcomes.filter((o) => o.status !== 200 && o.status !== 503);
    expect(unexpected).toEqual([]);
    for (const o of outcomes.filter((x) => x.status === 503)) {
      expect(o.body).toEqual({ detail: "Service Unavailable" });
    }
    // Every read answered before the signal succeeded, and the ones answered 200 in the gap did within
    // the request timeout.
    expect(before.filter((o) => o.sentAt + o.ms < signalAt).every((o) => o.status === 200)).toBe(true);
    expect(gap.filter((o) => o.status === 200).every((o) => o.ms < 10_000)).toBe(true);
    // The gap was real (reads went on while rounds was away) and bounded.
    expect(gap.length).toBeGreaterThan(0);
    expect(exitedAt - signalAt).toBeLessThan(15_000);
  }, 150_000);
});
