/** After the deploy tier: nothing of the run is left (containers, pods, volumes, networks, images). */
import { spawnSync } from "node:child_process";
import { leftovers, removeRun, runId } from "./support/podman";
import { log } from "./global-setup";

export default async function globalTeardown(): Promise<void> {
  if (process.env.ROUNDS_DEPLOY_SKIP) return;
  removeRun(runId());
  const left = leftovers(runId());
  // Anonymous volumes (an image's VOLUME) carry no label: any volume that was not there before is one.
  const before = new Set((process.env.ROUNDS_DEPLOY_VOLUMES_BEFORE ?? "").split("\n").filter(Boolean));
  const now = (spawnSync("podman", ["volume", "ls", "-q"], { encoding: "utf8" }).stdout ?? "").split("\n");
  const anonymous = now.filter((v) => v && !before.has(v));
  if (anonymous.length > 0) left.anonymousVolumes = anonymous;
  if (Object.keys(left).length > 0) throw new Error(`The deploy tier left ${JSON.stringify(left)}`);
  const started = Number(process.env.ROUNDS_DEPLOY_STARTED ?? Date.now());
  log(`cleaned up; the tier took ${Math.round((Date.now() - started) / 1000)} s`);
}
