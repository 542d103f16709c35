/**
 * deploy/k8s/ through `podman kube play`, as far as podman (4.3 here) plays it: Deployments (one pod
 * per replica), ConfigMaps, and Secrets. The pods join a network of the run's own where NATS and Redis
 * run as compose runs them (the manifests expect them outside, by name). Each probe a container declares
 * (httpGet: path and port, named or numbered) must answer 200 at the pod's address: podman itself runs
 * no readiness probe, and runs liveness probes only as healthchecks through systemd timers and curl,
 * neither of which exists here, so the tier asks them itself. What podman cannot play is said in the
 * output. MongoDB cannot run here: MONGO_URI is taken out of the ConfigMap, and each pod keeps the
 * embedded store in the image's volume.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import YAML from "yaml";
import { root } from "../support/processes";
import { log } from "./global-setup";
import { planCompose, requiredVariables, variableValues } from "./support/compose";
import { Deployment } from "./support/deployment";
import { SERVICE_RUNTIME, type Images } from "./support/images";
import { neededSecrets, secretData } from "./support/kube-secrets";
import { label, podman, RUN_LABEL, runId } from "./support/podman";

const skip = process.env.ROUNDS_DEPLOY_SKIP;
const maybe = skip ? describe.skip : describe;
const MINUTE = 60_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * What podman 4.3's kube play creates from a manifest; anything else it ignores or refuses: the
 * PodDisruptionBudgets and the HorizontalPodAutoscaler (availability.yaml) are named in the output and
 * left out, as are the NetworkPolicies and the Service.
 */
const PLAYED = new Set(["Deployment", "Pod", "ConfigMap", "PersistentVolumeClaim"]);

type K8sDoc = { kind: string; metadata: { name: string; labels?: Record<string, string> }; [k: string]: any };
interface Probe {
  deployment: string;
  container: string;
  kind: string;
  path: string;
  port: number;
}

let brokers: Deployment;
let docs: K8sDoc[];
let playFile: string;
const secrets: string[] = [];
const filesSecret = (name: string) => `${runId()}-${name}-files`;
let pauseImageBefore = false;

const probesOf = (d: K8sDoc): Probe[] =>
  (d.spec.template.spec.containers as any[]).flatMap((c) =>
    ["readinessProbe", "livenessProbe", "startupProbe"]
      .filter((kind) => c[kind]?.httpGet)
      .map((kind) => {
        const { path: probePath, port } = c[kind].httpGet;
        const named = (c.ports ?? []).find((p: any) => p.name === port);
        return {
          deployment: d.metadata.name,
          container: c.name,
          kind,
          path: probePath,
          port: Number(named ? named.containerPort : port),
        };
      }),
  );

maybe(`deploy/k8s/ through podman kube play${skip ? ` (${skip})` : ""}`, () => {
  beforeAll(async () => {
    const images = JSON.parse(process.env.ROUNDS_DEPLOY_IMAGES ?? "null") as Images;
    const composeFile = path.join(root, "docker-compose.yml");
    const k8sDir = path.join(root, "deploy/k8s");
    const texts = fs
      .readdirSync(k8sDir)
      .filter((f) => /\.ya?ml$/.test(f))
      .map((f) => fs.readFileSync(path.join(k8sDir, f), "utf8"));
    // One set of generated values for compose's variables and the Secrets' keys of the same names.
    const vars = variableValues(
      requiredVariables([fs.readFileSync(composeFile, "utf8"), ...texts].join("\n")),
    );
    const plan = planCompose(composeFile, vars, SERVICE_RUNTIME.env.DATA_DIR);
    brokers = new Deployment(
      { ...plan, containers: plan.containers.filter((c) => c.kind !== "service") },
      images,
      log,
    );
    await brokers.start();

    docs = texts.flatMap((t) => YAML.parseAllDocuments(t).map((d) => d.toJS() as K8sDoc)).filter(Boolean);
    const notPlayed = docs.filter((d) => !PLAYED.has(d.kind));
    for (const d of notPlayed) log(`podman kube play does not play ${d.kind} ${d.metadata.name}`);
    log("containerPorts are not published on the host (podman 4.3 would); probes are asked by the tier");

    // Secrets: none is shipped; the tier makes the ones the Deployments name, as the operations docs'
    // `kubectl create secret` commands do, with the passwords its NATS and Redis were given
    // (support/kube-secrets). podman 4.3 stores a played Secret in a form its own envFrom cannot read
    // back (containers/podman#16269), so each becomes a podman secret holding its data as JSON (base64
    // values), which is what kube play reads.
    pauseImageBefore =
      spawnSync("podman", ["image", "exists", "localhost/podman-pause:4.3.1-0"]).status === 0;
    expect(docs.filter((d) => d.kind === "Secret")).toEqual([]);
    // A secret volume reads the podman secret as a Secret object instead ({"data": …}) and writes each
    // value to its file as it stands, not decoded: each Secret a volume names gets a second podman
    // secret, `<run>-<name>-files`, holding the plain values so, which the played copy mounts. podman
    // names the volume it fills after that secret, so the run's prefix lets the cleanup find it.
    const mounted = new Set(
      docs
        .filter((d) => d.kind === "Deployment")
        .flatMap((d) => (d.spec.template.spec.volumes ?? []) as any[])
        .filter((v) => v.secret)
        .map((v) => v.secret.secretName as string),
    );
    const makeSecret = async (name: string, content: unknown) => {
      const file = path.join(os.tmpdir(), `${runId()}-${name}.json`);
      fs.writeFileSync(file, JSON.stringify(content), { mode: 0o600 });
      spawnSync("podman", ["secret", "rm", name], { stdio: "ignore" });
      fs.appendFileSync(path.join(os.tmpdir(), `${runId()}.secrets`), `${name}\n`);
      await podman(["secret", "create", name, file]);
      fs.rmSync(file);
      secrets.push(name);
    };
    for (const [name, plain] of secretData(neededSecrets(docs), vars)) {
      const data = Object.fromEntries(
        Object.entries(plain).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
      );
      await makeSecret(name, data);
      if (mounted.has(name)) await makeSecret(filesSecret(name), { data: plain });
      log(`Secret ${name} (${Object.keys(plain).join(", ")}) made as the operations docs make it`);
    }

    const played = docs.filter((d) => PLAYED.has(d.kind)).map((d) => structuredClone(d));
    for (const d of played) {
      if (d.kind === "ConfigMap" && d.data?.MONGO_URI !== undefined) {
        delete d.data.MONGO_URI;
        log(
          `ConfigMap ${d.metadata.name}: MONGO_URI taken out (no MongoDB here): each pod keeps the embedded store`,
        );
      }
      // A claim becomes a named volume of its name, which `kube down` leaves: the run's prefix too.
      if (d.kind === "PersistentVolumeClaim") {
        d.metadata.name = `${runId()}-${d.metadata.name}`;
        d.metadata.labels = { ...d.metadata.labels, [RUN_LABEL]: runId() };
      }
      if (d.kind === "Deployment") {
        // One pod per Deployment: without MongoDB each pod keeps its own embedded store, and two would
        // disagree (the manifests' replicas need the shared store; podman's handling of replicas also
        // differs between versions). The pod count below is one per Deployment so.
        if ((d.spec.replicas ?? 1) !== 1) {
          log(
            `Deployment ${d.metadata.name}: ${d.spec.replicas} replicas played as 1 (one pod per Deployment here)`,
          );
          d.spec.replicas = 1;
        }
        d.spec.template.metadata.labels = { ...d.spec.template.metadata.labels, [RUN_LABEL]: runId() };
        d.metadata.labels = { ...d.metadata.labels, [RUN_LABEL]: runId() };
        // podman 4.3 crashes on a secret volume whose `optional` is unset (containers/podman#16636),
        // and mounts each key under its own name (items' paths and defaultMode are not applied; the
        // manifests name each file as its key).
        // It also makes an emptyDir a named volume of the volume's own name, one for every pod that
        // names it so (every pod's `tmp` would be one folder): each gets the run's and the pod's name.
        const renamed = new Map<string, string>();
        for (const v of d.spec.template.spec.volumes ?? []) {
          if (v.persistentVolumeClaim) {
            v.persistentVolumeClaim.claimName = `${runId()}-${v.persistentVolumeClaim.claimName}`;
          }
          if (v.emptyDir) {
            renamed.set(v.name, `${runId()}-${d.metadata.name}-${v.name}`);
            v.name = renamed.get(v.name);
          }
          if (!v.secret) continue;
          v.secret = { ...v.secret, secretName: filesSecret(v.secret.secretName), optional: false };
          log(`Deployment ${d.metadata.name}: secret volume ${v.name} played from ${v.secret.secretName}`);
        }
        for (const c of d.spec.template.spec.containers) {
          for (const m of c.volumeMounts ?? []) m.name = renamed.get(m.name) ?? m.name;
        }
        for (const c of d.spec.template.spec.containers) {
          c.image = images.service;
          // podman 4.3 publishes every containerPort on the host (several pods' 3030 collide, and the
          // host's own ports would be taken): the pods are reached at their addresses instead, and the
          // probes' named ports are resolved from the manifest as it is.
          delete c.ports;
        }
      }
    }
    playFile = path.join(os.tmpdir(), `${runId()}-k8s.yaml`);
    fs.writeFileSync(playFile, played.map((d) => YAML.stringify(d)).join("---\n"), { mode: 0o600 });
    const out = await podman(["kube", "play", "--network", brokers.network, playFile], {
      timeoutMs: 10 * MINUTE,
      allowFailure: true,
    });
    if (out.code !== 0) log(`podman kube play said: ${out.stderr.trim().slice(-1500)}`);
  }, 15 * MINUTE);

  afterAll(async () => {
    if (playFile) {
      spawnSync("podman", ["kube", "down", playFile], { stdio: "ignore" });
      fs.rmSync(playFile, { force: true });
    }
    for (const s of secrets) spawnSync("podman", ["secret", "rm", s], { stdio: "ignore" });
    const filter = ["--filter", `label=${RUN_LABEL}=${runId()}`];
    const ids = (args: string[]) =>
      (spawnSync("podman", args, { encoding: "utf8" }).stdout ?? "").split("\n").filter(Boolean);
    for (const p of ids(["pod", "ps", "-q", ...filter])) spawnSync("podman", ["pod", "rm", "-f", p]);
    for (const c of ids(["ps", "-a", "-q", ...filter])) spawnSync("podman", ["rm", "-f", "-v", c]);
    for (const n of ids(["network", "ls", "-q", ...filter])) spawnSync("podman", ["network", "rm", "-f", n]);
    // The volumes kube play named (emptyDirs, secret files) carry the run's prefix, not its label.
    for (const v of ids(["volume", "ls", "-q"]).filter((v) => v.startsWith(`${runId()}-`)))
      spawnSync("podman", ["volume", "rm", "-f", v]);
    // kube play builds podman's pause image for the pods' infra containers: a run's leftover too.
    if (!pauseImageBefore)
      spawnSync("podman", ["rmi", "-f", "localhost/podman-pause:4.3.1-0"], { stdio: "ignore" });
  }, 5 * MINUTE);

  it("when the manifests are played, then the gateway and every Deployment's pod runs, read-only where declared, as the declared user", async () => {
    const deployments = docs.filter((d) => d.kind === "Deployment");
    expect(deployments.map((d) => d.metadata.name)).toContain("gateway");
    for (const d of deployments) {
      for (const c of d.spec.template.spec.containers) {
        const name = `${d.metadata.name}-pod-0-${c.name}`;
        const state = await podman([
          "inspect",
          "--format",
          "{{.State.Status}} {{.HostConfig.ReadonlyRootfs}} {{.Config.User}}",
          name,
        ]);
        const [status, readOnly, user] = state.stdout.trim().split(" ");
        expect({ name, status }).toEqual({ name, status: "running" });
        if (c.securityContext?.readOnlyRootFilesystem !== undefined)
          expect(readOnly).toBe(String(c.securityContext.readOnlyRootFilesystem));
        const runAs = c.securityContext?.runAsUser ?? d.spec.template.spec.securityContext?.runAsUser;
        if (runAs !== undefined) expect(user.split(":")[0]).toBe(String(runAs));
      }
    }
  });

  it(
    "when each declared probe is asked at its pod's address, then it answers 200",
    async () => {
      const probes = docs.filter((d) => d.kind === "Deployment").flatMap(probesOf);
      expect(probes.some((p) => p.deployment === "gateway")).toBe(true);
      expect(probes.some((p) => p.deployment !== "gateway")).toBe(true);
      const failures: string[] = [];
      for (const p of probes) {
        const infra = (
          await podman(["pod", "inspect", "--format", "{{.InfraContainerID}}", `${p.deployment}-pod-0`])
        ).stdout.trim();
        const ip = (
          await podman([
            "inspect",
            "--format",
            `{{(index .NetworkSettings.Networks "${brokers.network}").IPAddress}}`,
            infra,
          ])
        ).stdout.trim();
        const url = `http://${ip}:${p.port}${p.path}`;
        const deadline = Date.now() + 2 * MINUTE;
        let status = 0;
        while (Date.now() < deadline) {
          status = await fetch(url, { signal: AbortSignal.timeout(3000) })
            .then((r) => r.status)
            .catch(() => 0);
          if (status === 200) break;
          await sleep(1000);
        }
        if (status !== 200) {
          const logs = await podman(["logs", `${p.deployment}-pod-0-${p.container}`], { allowFailure: true });
          failures.push(
            `${p.deployment} ${p.kind} ${url}: ${status}\n${(logs.stdout + logs.stderr).slice(-1500)}`,
          );
        } else {
          log(`${p.deployment}: ${p.kind} ${p.path} on port ${p.port} answered 200`);
        }
      }
      expect(failures).toEqual([]);
    },
    10 * MINUTE,
  );

  it("when the run's pods are listed, then they carry the run's label (so that a failed run's cleanup finds them)", async () => {
    const pods = (await podman(["pod", "ps", "-q", "--filter", `label=${label()}`])).stdout
      .split("\n")
      .filter(Boolean);
    expect(pods.length).toBe(docs.filter((d) => d.kind === "Deployment").length);
  });
});
