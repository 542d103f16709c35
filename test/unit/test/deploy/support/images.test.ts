/**
 * The deploy tier builds its own service image (test/deploy/support/images.ts: no image can be pulled
 * there), so it proves something of deploy/Dockerfile only while the two agree on what the running
 * container sees: Node's version, the user, the working folder, the environment, the command, the
 * exposed ports and the declared volumes. Also the tier's pure helpers: compose's variable substitution
 * and the merge of containers.conf.
 */
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import {
  interpolate,
  opsCliEnv,
  planCompose,
  requiredVariables,
  variableValues,
} from "../../../../deploy/support/compose";
import { neededSecrets, secretData, variableOfKey } from "../../../../deploy/support/kube-secrets";
import { mergeContainersConf } from "../../../../deploy/support/host";
import { SERVICE_RUNTIME, serviceContainerfile } from "../../../../deploy/support/images";

const root = path.resolve(__dirname, "../../../../..");

interface Runtime {
  args: Record<string, string>;
  from: string;
  env: Record<string, string>;
  user: string | null;
  workdir: string | null;
  cmd: string | null;
  expose: string[];
  volumes: string[];
}

/** The last stage of a Dockerfile/Containerfile: what a container of the image runs with. */
function runtimeStage(text: string): Runtime {
  const lines = text
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  const args: Record<string, string> = {};
  let stage: Runtime | null = null;
  for (const line of lines) {
    const [instruction, ...rest] = line.split(/\s+/);
    const value = rest.join(" ");
    const op = instruction.toUpperCase();
    if (op === "ARG" && !stage) {
      const [k, v] = value.split("=");
      args[k] = v ?? "";
    } else if (op === "FROM") {
      stage = { args, from: value, env: {}, user: null, workdir: null, cmd: null, expose: [], volumes: [] };
    } else if (stage && op === "ENV") {
      for (const pair of value.split(/\s+/)) {
        const [k, ...v] = pair.split("=");
        stage.env[k] = v.join("=");
      }
    } else if (stage && op === "USER") stage.user = value;
    else if (stage && op === "WORKDIR") stage.workdir = value;
    else if (stage && op === "CMD") stage.cmd = value;
    else if (stage && op === "EXPOSE") stage.expose.push(...value.split(/\s+/));
    else if (stage && op === "VOLUME") stage.volumes.push(...value.split(/\s+/));
  }
  if (!stage) throw new Error("No FROM");
  return stage;
}

const dockerfile = runtimeStage(fs.readFileSync(path.join(root, "deploy/Dockerfile"), "utf8"));
const recipe = runtimeStage(serviceContainerfile("localhost/base:test"));

describe("the deploy tier's image recipe and deploy/Dockerfile's runtime stage", () => {
  it("when both are read, then Node's version is the same (the Dockerfile's node image, the recipe's production binary)", () => {
    expect(dockerfile.from).toBe("node:${NODE_VERSION}-bookworm-slim");
    expect(dockerfile.args.NODE_VERSION).toBe(SERVICE_RUNTIME.nodeVersion);
  });

  it("when both are read, then the user, working folder, environment and command are the same", () => {
    expect(recipe.user).toBe(dockerfile.user);
    expect(recipe.workdir).toBe(dockerfile.workdir);
    expect(recipe.env).toEqual(dockerfile.env);
    expect(JSON.parse(recipe.cmd as string)).toEqual(JSON.parse(dockerfile.cmd as string));
  });

  it("when both are read, then the exposed ports and the declared volumes are the same", () => {
    expect(recipe.expose.sort()).toEqual(dockerfile.expose.sort());
    expect(recipe.volumes.sort()).toEqual(dockerfile.volumes.sort());
  });

  it("when the image runs as shipped, then it is not root and its data folder is its one volume", () => {
    expect(dockerfile.user).toBe("node");
    expect(dockerfile.volumes).toEqual([dockerfile.env.DATA_DIR]);
    expect(dockerfile.env.HOST).toBe("0.0.0.0");
  });
});

describe("compose's variable substitution", () => {
  it("when a variable is set, unset or empty, then ${V:?…}, ${V:-d}, ${V-d}, ${V} and $$ become what compose makes of them", () => {
    const vars = { A: "a", EMPTY: "" };
    expect(interpolate("${A:?set A}-${B:-b}-${EMPTY:-e}-${EMPTY-x}-${A}-$$A", vars)).toBe("a-b-e--a-$A");
    expect(() => interpolate("${B:?set B (32 characters)}", vars)).toThrow("B: set B (32 characters)");
    expect(() => interpolate("${EMPTY:?needed}", vars)).toThrow("EMPTY: needed");
  });

  it("when the compose text needs variables, then those without a default are listed and each gets a value", () => {
    const names = requiredVariables("${JWT_PRIVATE_KEYS:?k} ${NATS_PASSWORD:?p} ${TRACING:-} ${PLAIN}");
    expect(names.sort()).toEqual(["JWT_PRIVATE_KEYS", "NATS_PASSWORD", "PLAIN"]);
    const values = variableValues(names, {});
    expect(values.JWT_PRIVATE_KEYS).toMatch(
      /^-----BEGIN PRIVATE KEY-----\n[\s\S]+-----END PRIVATE KEY-----\n$/,
    );
    // A password as docs/operations.md makes one: a letter first (NATS reads a leading digit as a number).
    expect(values.NATS_PASSWORD).toMatch(/^p[0-9a-f]{48}$/);
    expect(values.PLAIN).toMatch(/^[0-9a-f]{64}$/);
    expect(variableValues(["NATS_PASSWORD"], { NATS_PASSWORD: "given" }).NATS_PASSWORD).toBe("given");
  });
});

describe("mergeContainersConf", () => {
  it("when there is no file, then both settings are written under their tables", () => {
    expect(mergeContainersConf("")).toBe(
      '[engine]\nruntime = "runc"\n\n[containers]\ndefault_ulimits = []\n',
    );
  });

  it("when the file has other settings and a different runtime, then only the two keys change", () => {
    const before = [
      "# site settings",
      "[containers]",
      'default_ulimits = ["nofile=1048576:1048576"]',
      'log_driver = "k8s-file"',
      "",
      "[engine]",
      'runtime = "crun"',
      'events_logger = "file"',
      "",
      "[network]",
      'network_backend = "netavark"',
      "",
    ].join("\n");
    const after = mergeContainersConf(before);
    expect(after).toBe(
      before
        .replace('default_ulimits = ["nofile=1048576:1048576"]', "default_ulimits = []")
        .replace('"crun"', '"runc"'),
    );
    expect(mergeContainersConf(after)).toBe(after);
  });
});

describe("the deploy tier's reading of the shipped files", () => {
  const composeFile = path.join(root, "docker-compose.yml");
  const vars = variableValues(requiredVariables(fs.readFileSync(composeFile, "utf8")), {});

  it("when docker-compose.yml is planned, then each container gets compose's entrypoint, user, dropped capabilities, security options and tmpfs", () => {
    const plan = planCompose(composeFile, vars, "/var/lib/rounds");
    const redis = plan.containers.find((c) => c.service === "redis");
    expect(redis).toMatchObject({
      kind: "redis",
      entrypoint: ["sh", "/usr/local/etc/redis/start.sh"],
      user: "999:999",
      capDrop: ["ALL"],
      securityOpt: ["no-new-privileges:true"],
      tmpfs: ["/tmp"],
    });
    const gateway = plan.containers.find((c) => c.service === "gateway");
    expect(gateway?.env.NATS_PASSWORD).toBe(vars.NATS_GATEWAY_PASSWORD);
    expect(plan.skipped.map((s) => s.service)).toContain("mongo");
    expect(opsCliEnv(vars)).toEqual({
      NATS_USER: "ops",
      NATS_PASSWORD: vars.NATS_OPS_PASSWORD,
      REDIS_USER: "ops",
      REDIS_PASSWORD: vars.REDIS_OPS_PASSWORD,
    });
  });

  it("when deploy/k8s is read, then every Secret its Deployments name is made from compose's variables, as the operations docs make them", () => {
    const dir = path.join(root, "deploy/k8s");
    const docs = fs
      .readdirSync(dir)
      .filter((f) => f.endsWith(".yaml"))
      .flatMap((f) =>
        YAML.parseAllDocuments(fs.readFileSync(path.join(dir, f), "utf8")).map((d) => d.toJS()),
      );
    const data = secretData(neededSecrets(docs), vars);
    expect(data.get("rounds-stores-credentials")).toEqual({
      "nats-password": vars.NATS_STORES_PASSWORD,
      "redis-password": vars.REDIS_STORES_PASSWORD,
      "mongo-password": vars.MONGO_STORES_PASSWORD,
    });
    // auth's keys: the signing keys' file and the refresh MAC keys; the optional legacy secrets left out.
    expect(data.get("rounds-auth-keys")).toEqual({
      "jwt-private-keys.pem": vars.JWT_PRIVATE_KEYS,
      "refresh-token-secrets": vars.REFRESH_TOKEN_SECRETS,
    });
    // Each name the operations docs' `kubectl create secret` commands make, and no other.
    const ops = fs.readFileSync(path.join(root, "docs/operations.md"), "utf8");
    const documented = [...ops.matchAll(/kubectl create secret generic (\S+)/g)].map((m) => m[1]);
    expect([...data.keys()].sort()).toEqual([...new Set(documented)].sort());
    expect(variableOfKey("rounds-gateway-credentials", "redis-password")).toBe("REDIS_GATEWAY_PASSWORD");
  });
});
