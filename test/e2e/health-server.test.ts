// Tier: one process only (a process's own HEALTH_PORT server, on a broker the test starts).
import type { AddressInfo } from "node:net";
import { loadConfig } from "../../shared/config";
import { createBroker } from "../../app/broker";
import { startHealthServer } from "../../shared/runtime/health-server";
import { testEnv } from "../support/system";

describe("HEALTH_PORT probes of a process without the gateway", () => {
  it("when the users service runs alone, then /health and /health/ready answer 200 for it", async () => {
    const broker = createBroker(loadConfig(testEnv()), ["users"]);
    await broker.start();
    const server = startHealthServer(broker, 0, ["users"], "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const live = await fetch(`${base}/health`);
      expect(live.status).toBe(200);
      expect(await live.json()).toEqual({ status: "ok" });
      const ready = await fetch(`${base}/health/ready`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({
        status: "ready",
        checks: { transporter: "none (one process)", users: "ok" },
      });
      expect((await fetch(`${base}/other`)).status).toBe(404);
    } finally {
      server.close();
      await broker.stop();
    }
  });

  it("when a named service is not started in the process, then /health/ready is 503 and says so", async () => {
    const broker = createBroker(loadConfig(testEnv()), ["settings"]);
    await broker.start();
    const server = startHealthServer(broker, 0, ["settings", "stores"], "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/health/ready`);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({
        status: "not ready",
        checks: { transporter: "none (one process)", settings: "ok", stores: "not started" },
      });
    } finally {
      server.close();
      await broker.stop();
    }
  });
});
