/**
 * deploy/k8s/ as a cluster would take it, checked offline: every document against the Kubernetes API's
 * schemas with unknown fields refused (test/unit/support/manifest-schemas.ts), then what operators expect
 * of it: the gateway at two replicas behind a PodDisruptionBudget, spread over nodes and
 * scaled on CPU; every Deployment with a startup probe and a grace period above its own stop bound.
 */
import fs from "node:fs";
import path from "node:path";
import { parseAllDocuments } from "yaml";
import { configSchema } from "../../../shared/config";
import { CLOSE_MARGIN_MS } from "../../../shared/runtime/shutdown";
import { modelErrors, typeErrors, type K8sDoc } from "../support/manifest-schemas";

const dir = path.resolve(__dirname, "../../../deploy/k8s");
const files = fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f));
const docs = files.flatMap((f) =>
  parseAllDocuments(fs.readFileSync(path.join(dir, f), "utf8"))
    .map((d) => d.toJS() as K8sDoc | null)
    .filter((d): d is K8sDoc => d !== null),
);
const ofKind = (kind: string) => docs.filter((d) => d.kind === kind) as any[];
const deployments = ofKind("Deployment");
const configMap = ofKind("ConfigMap")[0];

/**
 * A setting's value in a container: its own env, else the ConfigMap, else the default. A setting this
 * build does not have is taken as 0 (a process without SHUTDOWN_DELAY_MS does not delay).
 */
function setting(container: any, name: string): number {
  const own = (container.env ?? []).find((e: any) => e.name === name)?.value;
  const fallback = Object.values(configSchema).find((e) => e.env === name)?.default ?? "0";
  return Number(own ?? configMap.data[name] ?? fallback);
}

/** The longest a container's stop may take, in seconds: delay, drain, and the margin to disconnect. */
const stopBoundSeconds = (c: any) =>
  (setting(c, "SHUTDOWN_DELAY_MS") + setting(c, "SHUTDOWN_TIMEOUT_MS") + CLOSE_MARGIN_MS) / 1000;

const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

describe("deploy/k8s against the Kubernetes schemas", () => {
  it("when every document is validated by kubernetes-models, then none has an error", () => {
    expect(docs.length).toBeGreaterThan(10);
    expect(modelErrors(docs).filter(Boolean)).toEqual([]);
  });

  it("when every document is type-checked against its model's interface, then none has an unknown field, a wrong type or a missing one", () => {
    expect(typeErrors(docs)).toEqual([]);
  });

  it("when a Deployment has a misspelt or misplaced field, then the check refuses it", () => {
    const bad = structuredClone(deployments[0]);
    bad.spec.template.spec.containers[0].startupprobe = { httpGet: { path: "/health", port: "http" } };
    const errors = typeErrors([bad]);
    expect(errors).toEqual([expect.stringMatching(/startupprobe.*does not exist in type 'IContainer'/)]);
    const wrongType = structuredClone(deployments[0]);
    wrongType.spec.replicas = "2";
    expect(modelErrors([wrongType])).toEqual([expect.stringMatching(/replicas must be integer/)]);
  });
});

describe("deploy/k8s availability", () => {
  const gateway = deployments.find((d) => d.metadata.name === "gateway");
  const gatewayLabels = gateway.spec.template.metadata.labels;

  it("when the gateway is read, then it runs two replicas, spread over nodes (hard) and zones", () => {
    expect(gateway.spec.replicas).toBe(2);
    const spread = gateway.spec.template.spec.topologySpreadConstraints;
    expect(spread).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          topologyKey: "kubernetes.io/hostname",
          maxSkew: 1,
          whenUnsatisfiable: "DoNotSchedule",
          labelSelector: { matchLabels: gatewayLabels },
        }),
        expect.objectContaining({ topologyKey: "topology.kubernetes.io/zone" }),
      ]),
    );
  });

  it("when the PodDisruptionBudgets are read, then each Deployment's pods have one that lets fewer go than it runs", () => {
    const budgets = ofKind("PodDisruptionBudget");
    for (const d of deployments) {
      const labels = d.spec.template.metadata.labels;
      const own = budgets.filter((b) => matches(b.spec.selector.matchLabels, labels));
      expect({ deployment: d.metadata.name, budgets: own.length }).toEqual({
        deployment: d.metadata.name,
        budgets: 1,
      });
      const { maxUnavailable, minAvailable } = own[0].spec;
      const mayGo = maxUnavailable ?? d.spec.replicas - minAvailable;
      expect({ deployment: d.metadata.name, mayGo: mayGo >= 1 && mayGo < d.spec.replicas }).toEqual({
        deployment: d.metadata.name,
        mayGo: true,
      });
    }
  });

  it("when the autoscaler is read, then it scales the gateway on CPU from its replicas up, and the gateway requests CPU", () => {
    const [hpa, ...others] = ofKind("HorizontalPodAutoscaler");
    expect(others).toEqual([]);
    expect(hpa.apiVersion).toBe("autoscaling/v2");
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: "apps/v1", kind: "Deployment", name: "gateway" });
    expect(hpa.spec.minReplicas).toBe(gateway.spec.replicas);
    expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
    expect(hpa.spec.metrics).toEqual([
      {
        type: "Resource",
        resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 70 } },
      },
    ]);
    // Utilization is a share of the request: without one the autoscaler has nothing to compute.
    for (const c of gateway.spec.template.spec.containers) expect(c.resources.requests.cpu).toBeDefined();
  });
});

describe("deploy/k8s start and stop", () => {
  it("when each Deployment is read, then its container has a startup probe on /health that allows a minute or more before liveness applies", () => {
    for (const d of deployments) {
      for (const c of d.spec.template.spec.containers) {
        const probe = c.startupProbe;
        expect({ deployment: d.metadata.name, httpGet: probe?.httpGet }).toEqual({
          deployment: d.metadata.name,
          httpGet: c.livenessProbe.httpGet,
        });
        expect({
          deployment: d.metadata.name,
          seconds: (probe.periodSeconds ?? 10) * (probe.failureThreshold ?? 3) >= 60,
        }).toEqual({ deployment: d.metadata.name, seconds: true });
      }
    }
  });

  it("when each Deployment is read, then its grace period exceeds its containers' delay plus drain bound plus margin, from their own settings", () => {
    for (const d of deployments) {
      const grace = d.spec.template.spec.terminationGracePeriodSeconds;
      for (const c of d.spec.template.spec.containers) {
        const bound = stopBoundSeconds(c);
        expect({ deployment: d.metadata.name, grace, bound, above: grace > bound }).toEqual({
          deployment: d.metadata.name,
          grace,
          bound,
          above: true,
        });
      }
    }
  });

  it("when a Service routes to a Deployment's pods, then on SIGTERM they keep serving longer than readiness takes to drop them", () => {
    const routed = deployments.filter((d) =>
      ofKind("Service").some((s) => matches(s.spec.selector, d.spec.template.metadata.labels)),
    );
    expect(routed.map((d) => d.metadata.name)).toEqual(["gateway"]);
    for (const d of routed) {
      for (const c of d.spec.template.spec.containers) {
        const r = c.readinessProbe;
        const detectMs = (r.periodSeconds ?? 10) * (r.failureThreshold ?? 3) * 1000;
        // The process delays itself (SHUTDOWN_DELAY_MS); a preStop sleep would be the other way.
        const delayMs = setting(c, "SHUTDOWN_DELAY_MS");
        expect({ deployment: d.metadata.name, delayMs, detectMs, longer: delayMs > detectMs }).toEqual({
          deployment: d.metadata.name,
          delayMs,
          detectMs,
          longer: true,
        });
        expect(c.lifecycle?.preStop).toBeUndefined();
      }
    }
  });
});
