/**
 * What the deploy tier needs of the machine, installed and configured by itself: podman, runc,
 * debootstrap and haproxy (Debian packages, installed when absent; haproxy is the load balancer of the
 * rolling update, test/deploy/rolling.test.ts), and two settings of /etc/containers/containers.conf
 * that podman needs on these machines: `runtime = "runc"` under [engine] (crun fails on a hybrid cgroup
 * setup) and `default_ulimits = []` under [containers] (podman's default ulimits exceed the hard limits,
 * so setrlimit fails with EPERM). The file is merged, never replaced: other settings stay.
 * With CI=true anything missing fails the tier; elsewhere it is skipped with the reason.
 */
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";

export const PACKAGES = {
  podman: "podman",
  runc: "runc",
  debootstrap: "debootstrap",
  haproxy: "haproxy",
} as const;
export const CONTAINERS_CONF = "/etc/containers/containers.conf";

/** The settings the tier needs, by TOML table. */
export const NEEDED_SETTINGS: Record<string, Record<string, string>> = {
  engine: { runtime: '"runc"' },
  containers: { default_ulimits: "[]" },
};

/**
 * `text` (a containers.conf, possibly empty) with each needed key set in its table: an existing line for
 * the key is replaced, a missing one added at the top of its table, a missing table appended. Comments,
 * other keys and other tables are kept as they are.
 */
export function mergeContainersConf(text: string, needed = NEEDED_SETTINGS): string {
  const lines = text === "" ? [] : text.replace(/\n$/, "").split("\n");
  for (const [table, settings] of Object.entries(needed)) {
    let start = lines.findIndex((l) => l.trim() === `[${table}]`);
    if (start < 0) {
      if (lines.length > 0 && lines[lines.length - 1].trim() !== "") lines.push("");
      lines.push(`[${table}]`);
      start = lines.length - 1;
    }
    let end = lines.findIndex((l, i) => i > start && /^\s*\[/.test(l));
    if (end < 0) end = lines.length;
    for (const [key, value] of Object.entries(settings)) {
      const line = `${key} = ${value}`;
      const at = lines.findIndex((l, i) => i > start && i < end && new RegExp(`^\\s*${key}\\s*=`).test(l));
      if (at >= 0) {
        lines[at] = line;
      } else {
        lines.splice(start + 1, 0, line);
        end++;
      }
    }
  }
  return `${lines.join("\n")}\n`;
}

const has = (command: string): boolean => spawnSync("sh", ["-c", `command -v ${command}`]).status === 0;

/** Installs what is missing (as root, through apt-get) and merges containers.conf; resolves to what was done. */
export function prepareHost(log: (line: string) => void): void {
  const missing = Object.entries(PACKAGES)
    .filter(([command]) => !has(command) && !fs.existsSync(`/usr/sbin/${command}`))
    .map(([, pkg]) => pkg);
  if (missing.length > 0) {
    if (process.getuid?.() !== 0)
      throw new Error(`The deploy tier needs ${missing.join(", ")}: install them as root`);
    log(`installing ${missing.join(" ")} (apt-get)`);
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
    execFileSync("apt-get", ["install", "-y", "-qq", ...missing], { stdio: "inherit", env });
  }
  const before = fs.existsSync(CONTAINERS_CONF) ? fs.readFileSync(CONTAINERS_CONF, "utf8") : "";
  const after = mergeContainersConf(before);
  if (after !== before) {
    log(`setting runtime = "runc" and default_ulimits = [] in ${CONTAINERS_CONF}`);
    fs.mkdirSync("/etc/containers", { recursive: true });
    fs.writeFileSync(CONTAINERS_CONF, after);
  }
}

/** Why the tier cannot run here (no root to install or configure podman), or null when it can. */
export function whyNotHere(): string | null {
  if (process.platform !== "linux") return "the deploy tier runs podman on Linux";
  if (process.getuid?.() !== 0 && !has("podman")) return "podman is not installed and this is not root";
  return null;
}
