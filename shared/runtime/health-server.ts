/**
 * A process without the gateway still needs probes (Kubernetes liveness and readiness): HEALTH_PORT
 * serves `/health` (every local service started) and `/health/ready` (transporter connected and every
 * local service's store reachable) for this process alone.
 */
import http from "node:http";
import type { ServiceBroker } from "moleculer";
import type { ServiceReadiness } from "./readiness";

export function startHealthServer(broker: ServiceBroker, port: number, services: string[]): http.Server {
  const server = http.createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "Content-Type": "application/json; charset=utf-8" });
      res.end(JSON.stringify(body));
    };
    if (req.url === "/health") {
      send(broker.started ? 200 : 503, { status: broker.started ? "ok" : "starting" });
      return;
    }
    if (req.url === "/health/ready") {
      void (async () => {
        const transit = broker.transit as { connected?: boolean } | undefined;
        const checks: Record<string, string> = {
          transporter: !transit ? "none (one process)" : transit.connected ? "ok" : "disconnected",
        };
        for (const name of services) {
          const local = broker.getLocalService(name);
          checks[name] = local
            ? await broker
                .call<ServiceReadiness, Record<string, never>>(
                  `${name}.ready`,
                  {},
                  { nodeID: broker.nodeID, timeout: 2000 },
                )
                .then(
                  (r) => (r.store === "ok" ? "ok" : "store unreachable"),
                  () => "unavailable",
                )
            : "not started";
        }
        const ready = Object.values(checks).every((v) => v === "ok" || v.startsWith("none"));
        send(ready ? 200 : 503, { status: ready ? "ready" : "not ready", checks });
      })();
      return;
    }
    send(404, { detail: "Not Found" });
  });
  server.listen(port);
  return server;
}
