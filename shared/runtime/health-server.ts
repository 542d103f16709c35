/**
 * A process without the gateway still needs probes (Kubernetes liveness and readiness): HEALTH_PORT
 * serves `/health` (every local service started) and `/health/ready` (transporter connected and every
 * local service's store reachable) for this process alone. It listens on HOST, as the gateway does
 * (0.0.0.0 where a kubelet probes it from outside the pod).
 */
import http from "node:http";
import type { ServiceBroker } from "moleculer";
import { checkReadiness } from "./readiness";

export function startHealthServer(
  broker: ServiceBroker,
  port: number,
  services: string[],
  host: string,
): http.Server {
  const server = http.createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, {
        "Content-Type": "application/json; charset=utf-8",
        "X-Content-Type-Options": "nosniff",
      });
      res.end(JSON.stringify(body));
    };
    if (req.url === "/health") {
      send(broker.started ? 200 : 503, { status: broker.started ? "ok" : "starting" });
      return;
    }
    if (req.url === "/health/ready") {
      void checkReadiness(broker, services, { localOnly: true, cacher: false }).then((r) =>
        send(r.status === "ready" ? 200 : 503, r),
      );
      return;
    }
    send(404, { detail: "Not Found" });
  });
  server.listen(port, host);
  return server;
}
