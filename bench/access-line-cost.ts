/**
 * `node --import tsx bench/access-line-cost.ts json|short > /dev/null`: the CPU one access-log line costs
 * (services/gateway/access-log: the line built, formatted by the Console logger, written to stdout),
 * five batches of 100,000 after a warm-up. Figures: docs/performance.md, "The access log".
 */
import { ServiceBroker } from "moleculer";
import { jsonLine } from "../shared/runtime/json-log";
import { accessLine, shortAccessLine } from "../services/gateway/access-log";
const json = process.argv[2] === "json";
const broker = new ServiceBroker({
  logger: {
    type: "Console",
    options: { level: "info", formatter: json ? jsonLine : "short", colors: false },
  },
});
const log = broker.getLogger("access");
const req = { method: "GET", $alias: { fullPath: "/rounds/:round_id" } } as never;
const res = { headersSent: true, statusCode: 200 } as never;
const spec = { path: "/rounds/:round_id" } as never;
function run(n: number) {
  const t0 = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const line = accessLine(req, res, spec, "0af7651916cd43dd8448eb211c80319c", start);
    if (json) log.info(line, "request");
    else log.info(shortAccessLine(line));
  }
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / n;
}
run(20000);
const xs = [1, 2, 3, 4, 5].map(() => run(100000)).sort((a, b) => a - b);
process.stderr.write(`${json ? "json" : "short"}: ${xs.map((x) => x.toFixed(2)).join(", ")} µs CPU a line\n`);
