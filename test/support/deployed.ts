/**
 * How production starts each kind of process (docker-compose.yml and deploy/k8s/services.yaml;
 * test/unit/deploy.files.test.ts checks they say the same): its Node options and its container's memory. What
 * measures memory (the bench's cases 6 and 7, the cluster's upload test) runs so; without a heap cap V8
 * leaves garbage uncollected for longer (Node 24 more than Node 20), which says how lazy the collector
 * is, not how much the process holds. Why these figures: docs/decisions/0060-node-24-production.md.
 */

import { SERVICE_USERS } from "../../shared/ops/nats-auth";

/** The kinds of process a deployment runs: one per service, `SERVICES` naming it (each its NATS user). */
export const PROCESS_KINDS = SERVICE_USERS;
export type ProcessKind = (typeof PROCESS_KINDS)[number];

export interface Deployed {
  /** NODE_OPTIONS of the container. */
  nodeOptions: string;
  /** Kubernetes' memory request and limit of the pod (and compose's `mem_limit`), in MiB. */
  memoryRequestMi: number;
  memoryLimitMi: number;
  /** Kubernetes' CPU request of the pod, in millicores: what the gateway's autoscaler takes 70% of. */
  cpuRequestM: number;
}

/** The young generation: 16 MB semi-spaces, Node 20's size, which Node 24 would otherwise double. */
const YOUNG = "--max-semi-space-size=16";

/**
 * Every service but the gateway keeps the 192 MB cap: measured, a larger one saved auth a few percent
 * and rounds nothing beyond the noise; the notifier's and the stores' memory figures (cases 7 and 6)
 * are taken with it (decision 0060).
 */
export const DEPLOYED: Record<ProcessKind, Deployed> = {
  // The gateway's hot read spends a quarter less CPU with a 2 GB heap cap than with 192 MB: V8 lets
  // the old generation grow further between collections when the cap is large (decision 0060). Its container's
  // limit holds the whole cap.
  gateway: {
    nodeOptions: `--max-old-space-size=2048 ${YOUNG}`,
    memoryRequestMi: 512,
    memoryLimitMi: 2304,
    cpuRequestM: 500,
  },
  auth: {
    nodeOptions: `--max-old-space-size=192 ${YOUNG}`,
    memoryRequestMi: 192,
    memoryLimitMi: 384,
    cpuRequestM: 100,
  },
  users: {
    nodeOptions: `--max-old-space-size=192 ${YOUNG}`,
    memoryRequestMi: 192,
    memoryLimitMi: 384,
    cpuRequestM: 100,
  },
  rounds: {
    nodeOptions: `--max-old-space-size=192 ${YOUNG}`,
    memoryRequestMi: 192,
    memoryLimitMi: 384,
    cpuRequestM: 100,
  },
  stores: {
    nodeOptions: `--max-old-space-size=192 ${YOUNG}`,
    memoryRequestMi: 192,
    memoryLimitMi: 384,
    cpuRequestM: 100,
  },
  settings: {
    nodeOptions: `--max-old-space-size=192 ${YOUNG}`,
    memoryRequestMi: 192,
    memoryLimitMi: 384,
    cpuRequestM: 100,
  },
  notifier: {
    nodeOptions: `--max-old-space-size=192 ${YOUNG}`,
    memoryRequestMi: 192,
    memoryLimitMi: 384,
    cpuRequestM: 100,
  },
};

/** The environment a process of `kind` gets, as deployed. */
export const asDeployed = (kind: ProcessKind): { NODE_OPTIONS: string } => ({
  NODE_OPTIONS: DEPLOYED[kind].nodeOptions,
});

/** Per-process variables for a test cluster (its `processEnv`): each process as deployed. */
export const deployedProcessEnv = (): Record<string, { NODE_OPTIONS: string }> =>
  Object.fromEntries(PROCESS_KINDS.map((kind) => [kind, asDeployed(kind)]));

/** A V8 size flag's value in MB (`--max-old-space-size=192` → 192), or null when absent. */
export function sizeFlag(options: string, name: string): number | null {
  const m = new RegExp(`(?:^|\\s)--${name}=(\\d+)(?:\\s|$)`).exec(options);
  return m ? Number(m[1]) : null;
}

/**
 * The most V8's heap may take under these options, in MB: the old space plus the young generation
 * (two semi-spaces and as much again for new large objects); null without a heap cap.
 */
export function heapBoundMb(options: string): number | null {
  const old = sizeFlag(options, "max-old-space-size");
  if (old === null) return null;
  return old + 3 * (sizeFlag(options, "max-semi-space-size") ?? 16);
}
