/**
 * The graceful stop's order (shared/runtime/shutdown.ts) on a real broker of one process: asked to
 * stop, it reports not ready at once, keeps running for the delay, then stops within its bound.
 */
import type { Service } from "moleculer";
import { checkReadiness } from "../../../../shared/runtime/readiness";
import {
  GracefulBroker,
  isLeaving,
  LEAVING_EVENT,
  STOPPING_EVENT,
  stopGracefully,
} from "../../../../shared/runtime/shutdown";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function startedBroker(stoppedMs = 0) {
  const broker = new GracefulBroker({ logger: false, transporter: null });
  const seen: string[] = [];
  broker.localBus.on(LEAVING_EVENT, () => seen.push("leaving"));
  broker.localBus.on(STOPPING_EVENT, () => seen.push("stopping"));
  broker.createService({
    name: "echo",
    actions: { hello: () => "hi" },
    async stopped(this: Service) {
      seen.push("stopped");
      await sleep(stoppedMs);
    },
  });
  await broker.start();
  return { broker, seen };
}

describe("stopGracefully", () => {
  it("when the stop is asked for with a delay, then readiness is 503 at once, calls are served through the delay, and the broker stops after it with code 0", async () => {
    const { broker, seen } = await startedBroker();
    expect((await checkReadiness(broker, [], { localOnly: true, cacher: false })).status).toBe("ready");
    const at = Date.now();
    const code = stopGracefully(broker, { delayMs: 400, timeoutMs: 1000 }, () => undefined);

    expect(isLeaving(broker)).toBe(true);
    expect(await checkReadiness(broker, [], { localOnly: true, cacher: false })).toEqual({
      status: "not ready",
      checks: { process: "stopping" },
    });
    await sleep(200);
    expect(await broker.call("echo.hello")).toBe("hi");
    expect(seen).toEqual(["leaving"]);

    expect(await code).toBe(0);
    expect(Date.now() - at).toBeGreaterThanOrEqual(390);
    expect(seen).toEqual(["leaving", "stopping", "stopped"]);
    expect(broker.started).toBe(false);
  });

  it("when the broker is stopped without a signal (a test, the CLI), then it reports not ready from the stop on", async () => {
    const { broker, seen } = await startedBroker(200);
    const stopping = broker.stop();
    expect(isLeaving(broker)).toBe(true);
    expect((await checkReadiness(broker, [], { localOnly: true, cacher: false })).status).toBe("not ready");
    await stopping;
    expect(seen).toEqual(["leaving", "stopping", "stopped"]);
  });
});
