/**
 * The framework's floor: what moleculer-web itself costs on this machine, with nothing of the system
 * in it. One broker (no transporter, no cacher, no validation of its own), a moleculer-web gateway with
 * case 8's routes, and one action that answers each request with the bytes recorded from the system
 * (status, content type, body), as the baseline does (baseline-server.ts). No authentication, no
 * storage, no cache: every request costs moleculer-web's parsing, routing, a local action call and
 * its answer. A target above what this serves cannot be met by a gateway built on moleculer-web here.
 * Its own process, forked by baseline.ts on the bench's Node; what to answer arrives over IPC.
 */
import { ServiceBroker, type Context } from "moleculer";
import ApiGateway from "moleculer-web";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import type { BaselineMessage } from "./baseline";
import { RecordedPlan } from "./recorded-plan";

const plan = new RecordedPlan();

const broker = new ServiceBroker({ logger: false, transporter: null, cacher: null, metrics: false });

broker.createService({
  name: "floor",
  actions: {
    answer(ctx: Context<unknown, Record<string, unknown>>): Buffer {
      const a = plan.next();
      ctx.meta.$statusCode = a.status;
      const type = a.headers.find(([name]) => name.toLowerCase() === "content-type");
      if (type) ctx.meta.$responseType = type[1];
      return a.body;
    },
  },
});

// Case 8's routes (bench/mixed.ts), all to the one action; bodies parsed as the gateway parses them.
const gateway = broker.createService({
  name: "api",
  mixins: [ApiGateway],
  settings: {
    port: 0,
    ip: "127.0.0.1",
    routes: [
      {
        path: "/",
        mappingPolicy: "restrict",
        bodyParsers: { json: true },
        aliases: {
          "GET /rounds/:id": "floor.answer",
          "POST /rounds/:id/join": "floor.answer",
          "GET /users/friends": "floor.answer",
          "GET /users/payments": "floor.answer",
          "POST /auth/refresh-token": "floor.answer",
          "GET /app-settings": "floor.answer",
        },
      },
    ],
  },
}) as unknown as { server: Server };

process.on("message", (msg: BaselineMessage) => {
  plan.load(msg);
  process.send?.({ ready: true });
});
process.on("disconnect", () => void broker.stop().then(() => process.exit(0)));

void broker.start().then(() => {
  process.send?.({ port: (gateway.server.address() as AddressInfo).port });
});
