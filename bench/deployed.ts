/**
 * How production starts Node (docker-compose.yml, deploy/k8s): with a 192 MB heap cap and a 16 MB
 * semi-space. Cases that report memory run so; without the cap V8 leaves garbage uncollected for
 * longer (Node 24 more than Node 20), which says how lazy the collector is, not how much the process
 * holds.
 */
export const HEAP_CAP_MB = 192;

/** Case 6's stores growth where the gateway and the stores are one process (embedded). */
export const SAME_PROCESS = "(same process)";
export const AS_DEPLOYED = {
  NODE_OPTIONS: `--max-old-space-size=${HEAP_CAP_MB} --max-semi-space-size=16`,
} as const;
