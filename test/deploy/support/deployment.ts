/**
 * compose's services as podman containers: one network of the run's own, each container reached by its
 * compose name (a network alias), `--read-only` with no tmpfs podman would add, as compose's user (else
 * the image's), with compose's entrypoint, dropped capabilities and security options,
 * with compose's environment, and writable only where a volume is declared (compose's volumes, the
 * image's VOLUME, and the embedded store's volume that replaces MONGO_URI). No port is published on the
 * host: the tests reach containers at their addresses on the network. Each container keeps one address
 * (given at `run`, and again when it is connected after a partition), as a host keeps its address
 * through a restart or a network outage: the clients of a test keep their URL across a gateway
 * restart, and a partition heals as one does, with the TCP connections of before resuming.
 */
import net from "node:net";
import type { ComposePlan, ContainerSpec } from "./compose";
import { probePort } from "./compose";
import type { Images } from "./images";
import { label, podman, runId } from "./podman";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Deployment {
  readonly network = `${runId()}-net`;
  private readonly specs = new Map<string, ContainerSpec>();
  private readonly addresses = new Map<string, string>();
  private subnetPrefix = "";

  constructor(
    readonly plan: ComposePlan,
    private readonly images: Images,
    private readonly log: (line: string) => void,
    /** The operations CLI's own NATS and Redis credentials (the `ops` users), given at each `ctl`. */
    private readonly cliEnv: Record<string, string> = {},
  ) {
    for (const spec of plan.containers) this.specs.set(spec.service, spec);
  }

  spec(service: string): ContainerSpec {
    const spec = this.specs.get(service);
    if (!spec) throw new Error(`No compose service ${service}`);
    return spec;
  }

  get services(): string[] {
    return [...this.specs.keys()];
  }

  /** The container of a compose service (or of an extra replica, `name` given). */
  container(service: string): string {
    return `${runId()}-${service}`;
  }

  async start(): Promise<void> {
    await podman(["network", "create", "--label", label(), this.network]);
    const subnet = (
      await podman(["network", "inspect", "--format", "{{range .Subnets}}{{.Subnet}} {{end}}", this.network])
    ).stdout.trim();
    const v4 = /^(\d+\.\d+\.\d+)\.0\/24/.exec(subnet.split(" ")[0] ?? "");
    if (!v4) throw new Error(`${this.network} has subnet ${subnet}; a /24 of IPv4 was expected`);
    this.subnetPrefix = v4[1];
    const named = new Set(
      this.plan.containers.flatMap((c) => c.volumes.filter((v) => v.kind === "named").map((v) => v.source)),
    );
    for (const v of named) await podman(["volume", "create", "--label", label(), this.volume(v)]);
    // Brokers first, then the services, then the gateway: each group ready before the next starts.
    for (const group of [["nats", "redis"], ["service"], ["gateway"]]) {
      const members = this.plan.containers.filter((c) =>
        group.includes(
          c.kind === "service" && c.env.SERVICES === "gateway"
            ? "gateway"
            : c.kind === "service"
              ? "service"
              : c.kind,
        ),
      );
      for (const spec of members) await this.run(spec, spec.service);
      await Promise.all(members.map((spec) => this.waitReady(spec.service)));
    }
  }

  private volume(name: string): string {
    return `${runId()}-${name}`;
  }

  /** Starts a container for `spec` under the network name `alias` (another replica: another alias). */
  async run(spec: ContainerSpec, alias: string, extraEnv: Record<string, string> = {}): Promise<void> {
    const image = this.images[spec.kind];
    const args = [
      "run",
      "-d",
      "--name",
      this.container(alias),
      "--label",
      label(),
      "--network",
      this.network,
      "--network-alias",
      alias,
      ...this.addressArgs(alias),
      "--read-only",
      "--read-only-tmpfs=false",
    ];
    if (spec.user) args.push("--user", spec.user);
    for (const c of spec.capDrop) args.push("--cap-drop", c);
    for (const o of spec.securityOpt) args.push("--security-opt", o);
    if (spec.entrypoint) args.push("--entrypoint", JSON.stringify(spec.entrypoint));
    for (const [k, v] of Object.entries({ ...spec.env, ...extraEnv })) args.push("-e", `${k}=${v}`);
    for (const v of spec.volumes) {
      const source = v.kind === "named" ? this.volume(v.source) : v.source;
      args.push("-v", `${source}:${v.target}${v.readOnly ? ":ro" : ""}`);
    }
    for (const t of spec.tmpfs) args.push("--tmpfs", t);
    args.push(image, ...(spec.command ?? []));
    await podman(args);
    this.specs.set(alias, spec);
  }

  /** `--ip` and `--mac-address` for `alias`: the same pair at every start and reconnect (macFor). */
  private addressArgs(alias: string): string[] {
    const ip = this.ipFor(alias);
    return ["--ip", ip, "--mac-address", macFor(ip)];
  }

  /** The address `alias` gets (and keeps): .10 on, in the order containers were first run. */
  private ipFor(alias: string): string {
    let ip = this.addresses.get(alias);
    if (!ip) {
      ip = `${this.subnetPrefix}.${10 + this.addresses.size}`;
      this.addresses.set(alias, ip);
    }
    return ip;
  }

  async address(service: string): Promise<string> {
    const out = await podman([
      "inspect",
      "--format",
      `{{(index .NetworkSettings.Networks "${this.network}").IPAddress}}`,
      this.container(service),
    ]);
    const ip = out.stdout.trim();
    if (!ip || ip === "<no value>") throw new Error(`${service} has no address on ${this.network}`);
    return ip;
  }

  /** The gateway's (or another replica's) base URL. */
  async url(service = "gateway"): Promise<string> {
    return `http://${await this.address(service)}:${probePort(this.spec(service)) ?? 3000}`;
  }

  /** Ready: /health/ready answers 200 on its probe port (brokers: their port takes connections). */
  async waitReady(service: string, timeoutMs = 120_000): Promise<number> {
    const spec = this.spec(service);
    const started = Date.now();
    let last = "";
    while (Date.now() - started < timeoutMs) {
      try {
        const ip = await this.address(service);
        const port = probePort(spec);
        if (port === null) {
          await tcp(ip, spec.kind === "nats" ? 4222 : 6379);
          return Date.now() - started;
        }
        const res = await fetch(`http://${ip}:${port}/health/ready`, { signal: AbortSignal.timeout(3000) });
        if (res.status === 200) return Date.now() - started;
        last = `${res.status} ${await res.text()}`;
      } catch (err) {
        last = (err as Error).message;
      }
      await sleep(500);
    }
    const logs = await this.logs(service);
    throw new Error(
      `${service} not ready after ${timeoutMs} ms (${last}); its log ends:\n${logs.slice(-3000)}`,
    );
  }

  async logs(service: string): Promise<string> {
    const out = await podman(["logs", this.container(service)], { allowFailure: true });
    return out.stdout + out.stderr;
  }

  /** `podman exec` in a service's container, with `env` added (the CLI's own credentials, say). */
  async exec(
    service: string,
    args: string[],
    timeoutMs = 120_000,
    env: Record<string, string> = {},
  ): Promise<string> {
    const envArgs = Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
    return (await podman(["exec", ...envArgs, this.container(service), ...args], { timeoutMs })).stdout;
  }

  /**
   * The operations CLI in the auth container, as docs/operations.md runs it (`docker compose exec -e
   * NATS_USER=ops …`): it joins the cluster with the `ops` credentials, which no container holds.
   */
  async ctl(args: string[]): Promise<string> {
    return this.exec("auth", ["node", "dist/bin/ctl.js", ...args], 120_000, this.cliEnv);
  }

  /** `podman kill` (SIGKILL), then `podman start` of the same container, ready again. */
  async killAndRestart(service: string, downMs = 1000): Promise<void> {
    await podman(["kill", this.container(service)]);
    await sleep(downMs);
    await podman(["start", this.container(service)]);
    await this.waitReady(service);
  }

  /** Cut off from the network (`podman network disconnect`) for `ms`, then connected again under its name. */
  async partition(service: string, ms: number): Promise<void> {
    await podman(["network", "disconnect", this.network, this.container(service)]);
    this.log(`${service} disconnected from ${this.network} for ${ms} ms`);
    await sleep(ms);
    await podman([
      "network",
      "connect",
      "--alias",
      service,
      ...this.addressArgs(service),
      this.network,
      this.container(service),
    ]);
    await this.waitReady(service);
  }

  async inspect(service: string, format: string): Promise<string> {
    return (await podman(["inspect", "--format", format, this.container(service)])).stdout.trim();
  }
}

/**
 * The MAC address a container keeps with its IP address across restarts, derived from it as Docker's
 * bridge network does (02:42 and the address's four bytes); in Kubernetes a restarted container keeps its
 * pod's network namespace, so its MAC too. podman gives every start a random one instead: its peers'
 * kernels then send to the old MAC until their ARP entries expire, 15 to 45 s and a probe later, and a
 * NATS or Redis container restarted in a second was out of reach for half a minute or more.
 */
export function macFor(ip: string): string {
  const bytes = ip.split(".").map((b) => Number(b).toString(16).padStart(2, "0"));
  return ["02", "42", ...bytes].join(":");
}

function tcp(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port, timeout: 2000 }, () => {
      socket.end();
      resolve();
    });
    socket.on("error", reject);
    socket.on("timeout", () => socket.destroy(new Error("timeout")));
  });
}
