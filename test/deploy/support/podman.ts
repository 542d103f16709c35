/**
 * podman, run as a command. Everything the tier creates (images, containers, volumes, networks, pods)
 * carries the label `rounds.deploy.run=<run id>`, so that one command removes a run's leftovers: after
 * the tests (afterAll / globalTeardown), and again from test/deploy/run.sh's exit trap, even when jest
 * itself was killed.
 */
import { execFile, spawnSync } from "node:child_process";

export const RUN_LABEL = "rounds.deploy.run";

/** This run's id: given by test/deploy/run.sh (for its trap), or made here. */
export const runId = (): string => {
  process.env.ROUNDS_DEPLOY_RUN ||= `rd${Date.now().toString(36)}${process.pid}`;
  return process.env.ROUNDS_DEPLOY_RUN;
};

export const label = (): string => `${RUN_LABEL}=${runId()}`;

export interface PodmanResult {
  stdout: string;
  stderr: string;
  code: number;
}

/** Runs `podman args`; rejects with its stderr on a non-zero exit unless `allowFailure`. */
export function podman(
  args: string[],
  options: { timeoutMs?: number; allowFailure?: boolean; input?: string } = {},
): Promise<PodmanResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      "podman",
      args,
      { timeout: options.timeoutMs ?? 120_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        if (code !== 0 && !options.allowFailure) {
          reject(
            new Error(
              `podman ${args.slice(0, 3).join(" ")} … failed (${code}): ${stderr.trim().slice(-2000)}`,
            ),
          );
        } else {
          resolve({ stdout, stderr, code });
        }
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

const filterOf = (id: string) => ["--filter", `label=${RUN_LABEL}=${id}`];
const ids = (args: string[]) =>
  (spawnSync("podman", args, { encoding: "utf8" }).stdout ?? "").split("\n").filter(Boolean);
const rm = (args: string[]) => spawnSync("podman", args, { stdio: "ignore" });

/**
 * Removes run `id`'s containers (with their anonymous volumes), volumes and networks, keeping its images
 * for the files that follow (a test file's afterAll; the global teardown removes the rest).
 */
export function removeContainers(id: string): void {
  const filter = filterOf(id);
  for (const c of ids(["ps", "-a", "-q", ...filter])) rm(["rm", "-f", "-v", c]);
  for (const v of ids(["volume", "ls", "-q", ...filter])) rm(["volume", "rm", "-f", v]);
  for (const n of ids(["network", "ls", "-q", ...filter])) rm(["network", "rm", "-f", n]);
}

/** Removes everything of run `id`: pods, then its containers, volumes and networks, then its images. */
export function removeRun(id: string): void {
  const filter = filterOf(id);
  for (const pod of ids(["pod", "ps", "-q", ...filter])) rm(["pod", "rm", "-f", pod]);
  removeContainers(id);
  for (const i of ids(["images", "-q", ...filter])) rm(["rmi", "-f", i]);
}

/** What run `id` left behind, by kind (empty when clean). */
export function leftovers(id: string): Record<string, string[]> {
  const filter = filterOf(id);
  const found: Record<string, string[]> = {
    pods: ids(["pod", "ps", "-q", ...filter]),
    containers: ids(["ps", "-a", "-q", ...filter]),
    volumes: ids(["volume", "ls", "-q", ...filter]),
    networks: ids(["network", "ls", "-q", ...filter]),
    images: ids(["images", "-q", ...filter]),
  };
  return Object.fromEntries(Object.entries(found).filter(([, v]) => v.length > 0));
}
