/**
 * docker-compose.yml as the deploy tier runs it: the file is the source of truth, read generically
 * (environment, entrypoint, command, volumes, tmpfs, user, capabilities dropped, security options, ports
 * of each service of the default profile), with
 * `${VAR:?…}`, `${VAR:-default}`, `${VAR}` and `$$` substituted as compose does, from values the tier
 * makes (random passwords and secrets, a P-256 key pair) unless the environment gives them.
 * Images: services built from deploy/Dockerfile run the tier's service image; `nats…` and `redis…`
 * images run the tier's Debian-built ones; MongoDB cannot run here, so `mongo…` is left out and each
 * service that had MONGO_URI keeps its embedded store on a volume of its own instead.
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";

export type ContainerKind = "service" | "nats" | "redis";

export interface VolumeMount {
  kind: "named" | "bind";
  /** A named volume's compose name, or a bind mount's absolute host path. */
  source: string;
  target: string;
  readOnly: boolean;
}

export interface ContainerSpec {
  /** The compose service name: the container's name on the network. */
  service: string;
  kind: ContainerKind;
  env: Record<string, string>;
  entrypoint?: string[];
  command?: string[];
  volumes: VolumeMount[];
  tmpfs: string[];
  user?: string;
  capDrop: string[];
  securityOpt: string[];
  ports: string[];
}

export interface ComposePlan {
  containers: ContainerSpec[];
  /** Compose services left out, with why. */
  skipped: { service: string; reason: string }[];
  /** Services whose MONGO_URI was replaced by an embedded store on a volume of their own. */
  embeddedInsteadOfMongo: string[];
}

/** Variables compose would require (`${VAR:?…}` or a bare `${VAR}`) in `text`. */
export function requiredVariables(text: string): string[] {
  const names = new Set<string>();
  for (const m of text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)(:?[?])?[^}]*\}/g)) {
    const [whole, name] = m;
    if (!/^\$\{[A-Za-z0-9_]+:?-/.test(whole)) names.add(name);
  }
  return [...names];
}

/**
 * A value for each variable: the environment's, else one made for this run. Names about keys get a
 * PEM P-256 key (private for `…PRIVATE…`, its public half for `…PUBLIC…`); passwords are made as
 * docs/operations.md makes them (`p` and 24 random bytes as hex: NATS's configuration reads a value
 * that starts with a digit as a number); anything else 32 random bytes as hex (MAC secrets).
 */
export function variableValues(
  names: string[],
  env: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const pair = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const values: Record<string, string> = {};
  for (const name of names) {
    const given = env[name];
    if (given) values[name] = given;
    else if (/PRIVATE_KEY/.test(name))
      values[name] = pair.privateKey.export({ type: "pkcs8", format: "pem" }) as string;
    else if (/PUBLIC_KEY/.test(name))
      values[name] = pair.publicKey.export({ type: "spki", format: "pem" }) as string;
    else if (/PASSWORD/.test(name)) values[name] = `p${randomBytes(24).toString("hex")}`;
    else values[name] = randomBytes(32).toString("hex");
  }
  return values;
}

/** One string with compose's substitutions; a required variable without a value throws its message. */
export function interpolate(value: string, vars: Record<string, string | undefined>): string {
  return value.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (m, braced, op, arg, bare) => {
      if (m === "$$") return "$";
      const name = (braced ?? bare) as string;
      const v = vars[name];
      const unset = v === undefined || (op?.startsWith(":") && v === "");
      if (op === ":-" || op === "-") return unset ? (arg as string) : (v as string);
      if (op === ":?" || op === "?") {
        if (unset) throw new Error(`${name}: ${arg || "required"}`);
        return v as string;
      }
      return v ?? "";
    },
  );
}

function interpolateAll(node: unknown, vars: Record<string, string>): unknown {
  if (typeof node === "string") return interpolate(node, vars);
  if (Array.isArray(node)) return node.map((n) => interpolateAll(n, vars));
  if (node && typeof node === "object")
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, interpolateAll(v, vars)]));
  return node;
}

type ComposeService = {
  build?: unknown;
  image?: string;
  profiles?: string[];
  environment?: Record<string, unknown> | string[];
  entrypoint?: string | string[];
  command?: string | string[];
  volumes?: (string | { type?: string; source?: string; target: string; read_only?: boolean })[];
  tmpfs?: string | string[];
  user?: string;
  cap_drop?: string[];
  security_opt?: string[];
  ports?: (string | number)[];
};

/** compose's `command` or `entrypoint`: a list as it is, a string split on blanks. */
const argsOf = (v: string | string[] | undefined): string[] | undefined =>
  v === undefined ? undefined : Array.isArray(v) ? v.map(String) : v.split(/\s+/).filter(Boolean);

function environmentOf(env: ComposeService["environment"]): Record<string, string> {
  if (!env) return {};
  if (Array.isArray(env)) {
    return Object.fromEntries(
      env.map((e) => [e.split("=")[0], e.includes("=") ? e.slice(e.indexOf("=") + 1) : ""]),
    );
  }
  return Object.fromEntries(
    Object.entries(env)
      .filter(([, v]) => v !== null && v !== undefined)
      .map(([k, v]) => [k, String(v)]),
  );
}

function volumeOf(v: NonNullable<ComposeService["volumes"]>[number], dir: string): VolumeMount {
  if (typeof v === "object") {
    const bind = v.type === "bind";
    return {
      kind: bind ? "bind" : "named",
      source: bind ? path.resolve(dir, v.source ?? "") : (v.source ?? ""),
      target: v.target,
      readOnly: v.read_only === true,
    };
  }
  const [source, target, mode] = v.split(":");
  const bind = source.startsWith(".") || source.startsWith("/");
  return {
    kind: bind ? "bind" : "named",
    source: bind ? path.resolve(dir, source) : source,
    target,
    readOnly: (mode ?? "").split(",").includes("ro"),
  };
}

function kindOf(service: ComposeService): ContainerKind | "mongo" | null {
  if (service.build) return "service";
  const image = service.image ?? "";
  if (/^(docker\.io\/)?(library\/)?nats(:|$)/.test(image)) return "nats";
  if (/^(docker\.io\/)?(library\/)?redis(:|$)/.test(image)) return "redis";
  if (/^(docker\.io\/)?(library\/)?mongo(:|$)/.test(image)) return "mongo";
  return null;
}

/** The containers to run for compose's default profile, in start order (brokers first, the gateway last). */
export function planCompose(file: string, vars: Record<string, string>, dataDir: string): ComposePlan {
  const text = fs.readFileSync(file, "utf8");
  const doc = interpolateAll(YAML.parse(text, { merge: true }), vars) as {
    services: Record<string, ComposeService>;
  };
  const dir = path.dirname(file);
  const plan: ComposePlan = { containers: [], skipped: [], embeddedInsteadOfMongo: [] };
  for (const [name, service] of Object.entries(doc.services)) {
    if (service.profiles && service.profiles.length > 0) {
      plan.skipped.push({ service: name, reason: `profile ${service.profiles.join(", ")} only` });
      continue;
    }
    const kind = kindOf(service);
    if (kind === "mongo") {
      plan.skipped.push({ service: name, reason: "no MongoDB image or package on this machine" });
      continue;
    }
    if (!kind)
      throw new Error(`compose service ${name}: no image for ${service.image ?? "?"} can be built here`);
    const env = environmentOf(service.environment);
    const volumes = (service.volumes ?? []).map((v) => volumeOf(v, dir));
    if (env.MONGO_URI !== undefined) {
      delete env.MONGO_URI;
      plan.embeddedInsteadOfMongo.push(name);
      const target = env.DATA_DIR || dataDir;
      if (!volumes.some((v) => v.target === target)) {
        volumes.push({ kind: "named", source: `${name}-embedded-store`, target, readOnly: false });
      }
    }
    const command = argsOf(service.command);
    const entrypoint = argsOf(service.entrypoint);
    plan.containers.push({
      service: name,
      kind,
      env,
      ...(entrypoint ? { entrypoint } : {}),
      ...(command ? { command } : {}),
      volumes,
      tmpfs: service.tmpfs === undefined ? [] : ([] as string[]).concat(service.tmpfs),
      ...(service.user ? { user: String(service.user) } : {}),
      capDrop: (service.cap_drop ?? []).map(String),
      securityOpt: (service.security_opt ?? []).map(String),
      ports: (service.ports ?? []).map(String),
    });
  }
  const rank = (c: ContainerSpec) => (c.kind !== "service" ? 0 : c.env.SERVICES === "gateway" ? 2 : 1);
  plan.containers.sort((a, b) => rank(a) - rank(b));
  return plan;
}

/** The port a service container answers its readiness probe on: the gateway's PORT, else HEALTH_PORT. */
export function probePort(spec: ContainerSpec): number | null {
  if (spec.kind !== "service") return null;
  const port = spec.env.SERVICES === "gateway" ? spec.env.PORT || "3000" : spec.env.HEALTH_PORT;
  return port ? Number(port) : null;
}

/** The operations CLI's environment beside compose's: the `ops` users of NATS and Redis. */
export function opsCliEnv(vars: Record<string, string>): Record<string, string> {
  return {
    NATS_USER: "ops",
    NATS_PASSWORD: vars.NATS_OPS_PASSWORD ?? "",
    REDIS_USER: "ops",
    REDIS_PASSWORD: vars.REDIS_OPS_PASSWORD ?? "",
  };
}
