/**
 * The baseline: a bare node:http server that answers every request with bytes recorded from the real
 * system (same status, same headers, same body). It is the most this machine can serve over HTTP to the
 * same load generator, so each scenario is reported as a share of it. It runs as its own process (forked
 * by baseline.ts), as the system under test does; what to answer arrives over IPC.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { BaselineMessage } from "./baseline";
import { RecordedPlan } from "./recorded-plan";

const plan = new RecordedPlan();

const server = http.createServer((req, res) => {
  // The body is read to its end before answering, as the gateway does.
  req.resume();
  req.on("end", () => {
    const a = plan.next();
    res.writeHead(a.status, a.headers.flat());
    res.end(a.body);
  });
});

process.on("message", (msg: BaselineMessage) => {
  plan.load(msg);
  process.send?.({ ready: true });
});
process.on("disconnect", () => server.close(() => process.exit(0)));

server.listen(0, "127.0.0.1", () => {
  process.send?.({ port: (server.address() as AddressInfo).port });
});
