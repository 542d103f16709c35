/**
 * Once per deploy-tier run: the machine prepared (test/deploy/support/host.ts) and the images built
 * (support/images.ts). The tests find the images in ROUNDS_DEPLOY_IMAGES. Where the tier cannot run
 * (no Linux, no root to install podman) it is skipped with the reason, except with CI=true: there
 * anything missing fails the run.
 */
import { spawnSync } from "node:child_process";
import { prepareHost, whyNotHere } from "./support/host";
import { buildImages, imageSizes } from "./support/images";
import { runId } from "./support/podman";

export const log = (line: string): void => void process.stdout.write(`[deploy] ${line}\n`);

export default async function globalSetup(): Promise<void> {
  const ci = process.env.CI === "true";
  const started = Date.now();
  process.env.ROUNDS_DEPLOY_STARTED = String(started);
  const why = whyNotHere();
  if (why) {
    if (ci) throw new Error(`CI=true and the deploy tier cannot run: ${why}`);
    process.env.ROUNDS_DEPLOY_SKIP = why;
    log(`skipped: ${why}`);
    return;
  }
  log(`run ${runId()}`);
  prepareHost(log);
  // Volumes that exist before: anything new at the end is a leftover (anonymous ones carry no label).
  process.env.ROUNDS_DEPLOY_VOLUMES_BEFORE = spawnSync("podman", ["volume", "ls", "-q"], {
    encoding: "utf8",
  }).stdout;
  const images = await buildImages(log);
  process.env.ROUNDS_DEPLOY_IMAGES = JSON.stringify(images);
  const sizes = await imageSizes(images);
  log(
    `images built in ${Math.round((Date.now() - started) / 1000)} s: ` +
      Object.entries(sizes)
        .map(([name, mb]) => `${name} ${mb} MB`)
        .join(", "),
  );
}
