/**
 * How production starts Node (docker-compose.yml, deploy/k8s/config.yaml; test/unit/deploy-files checks
 * they agree): a 192 MB heap cap and a 16 MB semi-space. What measures memory (the bench's cases 6 and
 * 7, the cluster's upload test) runs so; without the cap V8 leaves garbage uncollected for longer (Node
 * 24 more than Node 20), which says how lazy the collector is, not how much the process holds.
 */
export const HEAP_CAP_MB = 192;
export const AS_DEPLOYED = {
  NODE_OPTIONS: `--max-old-space-size=${HEAP_CAP_MB} --max-semi-space-size=16`,
} as const;
