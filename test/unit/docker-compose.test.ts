/**
 * docker-compose.yml as compose takes it, checked offline: against the Compose Specification's schema
 * with unknown keys refused (test/unit/support/manifest-schemas.ts), then what operators expect of it:
 * a health check per service, dependencies started once healthy, and a stop grace above
 * each process's own stop bound.
 */
import fs from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import { configSchema } from "../../shared/config";
import { CLOSE_MARGIN_MS } from "../../shared/runtime/shutdown";
import { composeErrors, composeSchema } from "./support/manifest-schemas";

const file = path.resolve(__dirname, "../../docker-compose.yml");
/** As compose reads it: YAML merge keys (`<<: *service`) resolved. */
const compose = () =>
  parse(fs.readFileSync(file, "utf8"), { merge: true }) as { services: Record<string, any> };
const services = Object.entries(compose().services);
/** The platform's own processes: the containers built from deploy/Dockerfile. */
const apps = services.filter(([, s]) => s.build?.dockerfile === "deploy/Dockerfile");

/** A setting's value in a container: its own environment, else the default (0 for one this build lacks). */
const setting = (svc: any, name: string): number =>
  Number(svc.environment?.[name] ?? Object.values(configSchema).find((e) => e.env === name)?.default ?? "0");

/** A compose duration (`1m30s`, `20s`, `500ms`) in milliseconds. */
function durationMs(value: string): number {
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001 };
  const parts = [...String(value).matchAll(/(\d+(?:\.\d+)?)(ms|us|h|m|s)/g)];
  if (parts.map((p) => p[0]).join("") !== String(value)) throw new Error(`not a duration: ${value}`);
  return parts.reduce((sum, [, n, unit]) => sum + Number(n) * units[unit], 0);
}

describe("docker-compose.yml against the Compose Specification", () => {
  it("when validated against the specification's schema, then it has no error", () => {
    expect(composeSchema().source).toMatch(/^dclint \d+\./);
    expect(composeErrors(compose())).toEqual([]);
  });

  it("when a service has a misspelt key, then the schema refuses it", () => {
    const bad = compose();
    bad.services.gateway.stop_grace = "20s";
    // Each app's healthcheck is the one object of the merged anchor: give auth its own.
    bad.services.auth.healthcheck = { ...bad.services.auth.healthcheck, intervl: "10s" };
    expect(composeErrors(bad)).toEqual([
      expect.stringMatching(/^\/services\/gateway must NOT have additional properties.*stop_grace/),
      expect.stringMatching(/^\/services\/auth\/healthcheck must NOT have additional properties.*intervl/),
    ]);
  });
});

describe("docker-compose.yml start and stop", () => {
  it("when every service is read, then it has a health check that runs", () => {
    expect(services.length).toBeGreaterThan(9);
    for (const [name, svc] of services) {
      const check = svc.healthcheck;
      expect({
        name,
        test: Array.isArray(check?.test) && check.test[0] !== "NONE",
        disabled: check?.disable,
      }).toEqual({ name, test: true, disabled: undefined });
    }
  });

  it("when every dependency is read, then it waits for its service to be healthy, and that service has a health check", () => {
    const all = compose().services;
    const edges = services.flatMap(([name, svc]) => {
      expect({ name, form: Array.isArray(svc.depends_on) ? "list" : "map" }).toEqual({ name, form: "map" });
      return Object.entries(svc.depends_on ?? {}).map(([dep, how]: [string, any]) => ({ name, dep, how }));
    });
    expect(edges.length).toBeGreaterThanOrEqual(apps.length * 3);
    for (const { name, dep, how } of edges) {
      expect({ name, dep, condition: how.condition, checked: Boolean(all[dep]?.healthcheck) }).toEqual({
        name,
        dep,
        condition: "service_healthy",
        checked: true,
      });
    }
    for (const [name, svc] of apps)
      expect({ name, deps: Object.keys(svc.depends_on).sort() }).toEqual({
        name,
        deps: ["mongo", "nats", "redis"],
      });
  });

  it("when every app container is read, then its health check asks /health/ready on the port its process serves it", () => {
    expect(apps.length).toBe(7);
    for (const [name, svc] of apps) {
      const port = name === "gateway" ? svc.environment.PORT : svc.environment.HEALTH_PORT;
      expect({
        name,
        port: Number(port) > 0,
        ready: svc.healthcheck.test.join(" ").includes("/health/ready"),
      }).toEqual({ name, port: true, ready: true });
    }
  });

  it("when every app container is read, then its stop grace exceeds its delay plus SHUTDOWN_TIMEOUT_MS plus the margin to disconnect", () => {
    for (const [name, svc] of apps) {
      const grace = durationMs(svc.stop_grace_period);
      const bound = setting(svc, "SHUTDOWN_DELAY_MS") + setting(svc, "SHUTDOWN_TIMEOUT_MS") + CLOSE_MARGIN_MS;
      expect({ name, grace, bound, above: grace > bound }).toEqual({ name, grace, bound, above: true });
    }
  });
});
