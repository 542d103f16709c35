/**
 * A process without the gateway still needs probes (Kubernetes liveness and readiness): HEALTH_PORT
 * serves `/health` (every local service started) and `/health/ready` (transporter connected and every
 * local service's store reachable) for this process alone.
 */
import http from "node:http";
import type { ServiceBroker } from "moleculer";
import { checkReadiness } from "./readiness";

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
      void checkReadiness(broker, services, { localOnly: true, cacher: false }).then((r) =>
        send(r.status === "ready" ? 200 : 503, r),
      );
      return;
    }
    send(404, { detail: "Not Found" });
  });
  server.listen(port);
  return server;
}
