/**
 * A one-off: a lone call's round trip over NATS through the transporter subclass, with its turn's
 * batching (`sub`) and with Moleculer's own `send` (`nobatch`), alternated, 3,000 sequential calls each
 * (the first 500 left out), two brokers of one process over a private nats-server. Figures:
 * bench/results/case8-attribution-2026-12-07.md. Run: `node --import tsx bench/lone-call-latency.ts`.
 */
import { ServiceBroker, Transporters } from "moleculer";
import { ReconnectingNatsTransporter } from "../shared/runtime/nats-transporter";
import { startNatsServer } from "../test/support/brokers";

class NoBatch extends ReconnectingNatsTransporter {
  override send(topic: string, data: Buffer, meta: Record<string, unknown>): Promise<void> {
    return Transporters.NATS.prototype.send.call(this, topic, data, meta) as Promise<void>;
  }
}

async function rtt(kind: string, url: string): Promise<number[]> {
  const mk = () => (kind === "sub" ? new ReconnectingNatsTransporter({ url }) : new NoBatch({ url }));
  const a = new ServiceBroker({ nodeID: `a-${kind}`, transporter: mk(), logger: false });
  const b = new ServiceBroker({ nodeID: `b-${kind}`, transporter: mk(), logger: false });
  b.createService({ name: "echo", actions: { say: (ctx) => ctx.params } });
  await Promise.all([a.start(), b.start()]);
  await a.waitForServices("echo");
  const out: number[] = [];
  for (let i = 0; i < 3000; i++) {
    const t = process.hrtime.bigint();
    await a.call("echo.say", { i });
    out.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  await Promise.all([a.stop(), b.stop()]);
  return out.slice(500).sort((x, y) => x - y);
}

async function main() {
  const server = await startNatsServer();
  try {
    for (const kind of ["nobatch", "sub", "nobatch", "sub", "nobatch", "sub"]) {
      const r = await rtt(kind, server.url);
      const q = (p: number) => r[Math.floor(p * (r.length - 1))].toFixed(0);
      console.log(`${kind}: p50 ${q(0.5)} µs, p90 ${q(0.9)} µs, p99 ${q(0.99)} µs (2,500 sequential calls)`);
    }
  } finally {
    await server.stop();
  }
}
void main().then(() => process.exit(0));
