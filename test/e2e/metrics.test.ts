// Tier: one process only (one process's METRICS_PORT; test/e2e/observability.test.ts reads every process's).
import { freePort } from "../support/brokers";
import { api, startSystem } from "../support/system";

describe("METRICS_PORT", () => {
  it("when set, then the process serves Prometheus metrics that count the requests it handled", async () => {
    const port = await freePort();
    const sys = await startSystem({ env: { METRICS_PORT: String(port) } });
    try {
      expect(
        (
          await api(sys, "GET", `/rounds/${sys.manifest.rounds.open}`, {
            token: sys.manifest.users.alice.access_token,
          })
        ).status,
      ).toBe(200);
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toMatch(/^moleculer_request_total\{[^}]*action="rounds\.get"[^}]*\} [1-9]/m);
    } finally {
      await sys.stop();
    }
  });
});
