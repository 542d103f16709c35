/**
 * docker-compose.yml's services as shipped, in podman containers (test/deploy/support/deployment.ts):
 * read-only, as the image's user, with compose's environment and only declared volumes writable. They
 * must all become ready, answer every operation of the API through the gateway container, keep a
 * picture across a restart of the stores container, survive a kill of each container and a partition
 * with the cluster tier's invariants, and serve the same data through two gateway containers.
 * MongoDB cannot run here: each service keeps its embedded store on a volume of its own instead.
 */
import path from "node:path";
import type { DemoManifest } from "../../shared/ops/seed";
import { root } from "../support/processes";
import { log } from "./global-setup";
import { opsCliEnv, planCompose, requiredVariables, variableValues } from "./support/compose";
import { Deployment } from "./support/deployment";
import { SERVICE_RUNTIME, type Images } from "./support/images";
import { removeContainers, runId } from "./support/podman";
import { apiChecks } from "./support/api-checks";
import { underFault, type FaultOutcome } from "./support/faults";
import { eventFields, eventForm, pngBytes } from "../support/upload";
import fs from "node:fs";

const skip = process.env.ROUNDS_DEPLOY_SKIP;
const maybe = skip ? describe.skip : describe;
const MINUTE = 60_000;

let deployment: Deployment;
let manifest: DemoManifest;
let gateway: string;

maybe(`compose's services in containers${skip ? ` (${skip})` : ""}`, () => {
  beforeAll(async () => {
    const images = JSON.parse(process.env.ROUNDS_DEPLOY_IMAGES ?? "null") as Images;
    const file = path.join(root, "docker-compose.yml");
    const vars = variableValues(requiredVariables(fs.readFileSync(file, "utf8")));
    const plan = planCompose(file, vars, SERVICE_RUNTIME.env.DATA_DIR);
    for (const s of plan.skipped) log(`compose service ${s.service} not run: ${s.reason}`);
    if (plan.embeddedInsteadOfMongo.length > 0) {
      log(
        `MONGO_URI: no MongoDB can run here, so ${plan.embeddedInsteadOfMongo.join(", ")} each keep the ` +
          "embedded store on a volume of their own (one replica per service but the gateway)",
      );
    }
    deployment = new Deployment(plan, images, log, opsCliEnv(vars));
    const started = Date.now();
    await deployment.start();
    log(`${plan.containers.length} containers ready in ${Math.round((Date.now() - started) / 1000)} s`);
    gateway = await deployment.url("gateway");
    // The demo dataset, by the CLI inside the auth container (it joins the cluster as a node, as ops).
    manifest = JSON.parse(await deployment.ctl(["seed"])) as DemoManifest;
  }, 15 * MINUTE);

  afterAll(async () => {
    removeContainers(runId());
  }, 5 * MINUTE);

  it("when compose's services run as containers, then each is read-only, runs as the image's user (services) and is ready", async () => {
    for (const service of deployment.services) {
      expect(await deployment.inspect(service, "{{.HostConfig.ReadonlyRootfs}}")).toBe("true");
      if (deployment.spec(service).kind === "service") {
        expect(await deployment.exec(service, ["id", "-un"])).toBe(`${SERVICE_RUNTIME.user}\n`);
        await expect(deployment.exec(service, ["touch", "/app/probe"])).rejects.toThrow(
          /Read-only file system/,
        );
      }
      await deployment.waitReady(service, 10_000);
    }
  });

  it("when every operation of the API is called through the gateway container, then each answers as the e2e suite expects", async () => {
    await apiChecks(gateway, manifest);
  });

  it(
    "when a picture is uploaded and the stores container restarted, then the picture is served after the restart",
    async () => {
      const bytes = pngBytes(300_000);
      const created = await fetch(`${gateway}/stores/${manifest.stores.alice_store}/events`, {
        method: "POST",
        headers: { authorization: `Bearer ${manifest.users.alice.access_token}` },
        body: eventForm(eventFields(), bytes),
      });
      expect(created.status).toBe(200);
      const url = new URL(
        ((await created.json()) as { cover_picture_url: string }).cover_picture_url,
        gateway,
      );
      const media = `${gateway}${url.pathname}`;
      expect(Buffer.from(await (await fetch(media)).arrayBuffer()).equals(bytes)).toBe(true);
      await deployment.killAndRestart("stores");
      // Ready, the restarted node still has to be announced to the gateway (Moleculer's discovery).
      const back = Date.now();
      let after = await fetch(media);
      while (after.status === 503 && Date.now() - back < 30_000) {
        await new Promise((r) => setTimeout(r, 250));
        after = await fetch(media);
      }
      log(`the picture was served again ${Date.now() - back} ms after the stores container was ready`);
      expect(after.status).toBe(200);
      expect(Buffer.from(await after.arrayBuffer()).equals(bytes)).toBe(true);
    },
    5 * MINUTE,
  );

  it(
    "when a second gateway container runs beside the first, then both serve the same data, and a write through one is read through the other",
    async () => {
      await deployment.run(deployment.spec("gateway"), "gateway-2");
      await deployment.waitReady("gateway-2");
      const second = await deployment.url("gateway-2");
      const read = async (base: string, id: string) =>
        (await fetch(`${base}/rounds/${id}`, {
          headers: { authorization: `Bearer ${manifest.users.bob.access_token}` },
        }).then((r) => r.json())) as { members_count?: number };
      expect(await read(second, manifest.rounds.open)).toEqual(await read(gateway, manifest.rounds.open));
      const joined = await fetch(`${second}/rounds/${manifest.rounds.free}/join`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${manifest.users.carol.access_token}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ attributes: [] }),
      });
      expect(joined.status).toBe(200);
      expect(await read(gateway, manifest.rounds.free)).toEqual(await read(second, manifest.rounds.free));
    },
    5 * MINUTE,
  );

  const outcomes: FaultOutcome[] = [];
  afterAll(() => {
    for (const o of outcomes) log(o.summary);
  });

  it.each(["nats", "redis", "auth", "users", "rounds", "stores", "settings", "notifier", "gateway"])(
    "when the %s container is killed (podman kill) and started again under joins and refreshes, then no seat is over-sold, each paid join pays once, and no honest refresher is logged out",
    async (service) => {
      const outcome = await underFault(deployment, manifest, `kill ${service}`, () =>
        deployment.killAndRestart(service),
      );
      outcomes.push(outcome);
    },
    5 * MINUTE,
  );

  it(
    "when the rounds container is cut off from the network (podman network disconnect) and connected again, then the same invariants hold",
    async () => {
      outcomes.push(
        await underFault(deployment, manifest, "partition rounds", () =>
          deployment.partition("rounds", 8000),
        ),
      );
    },
    5 * MINUTE,
  );
});
