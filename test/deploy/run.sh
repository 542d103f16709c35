#!/usr/bin/env bash
# npm run test:deploy: the deploy tier (jest project "deploy", test/deploy/), one test file at a time.
# Whatever happens to jest, the exit trap removes what the run made: everything podman holds under the
# run's label (test/deploy/support/podman.ts).
set -euo pipefail
cd "$(dirname "$0")/../.."
export ROUNDS_DEPLOY_RUN="${ROUNDS_DEPLOY_RUN:-rd$(date +%s)$$}"
export ROUNDS_DEPLOY_TIER=1
cleanup() {
  command -v podman >/dev/null 2>&1 || return 0
  local f="label=rounds.deploy.run=$ROUNDS_DEPLOY_RUN"
  podman pod ps -q --filter "$f" | xargs -r podman pod rm -f >/dev/null 2>&1 || true
  podman ps -a -q --filter "$f" | xargs -r podman rm -f -v >/dev/null 2>&1 || true
  podman volume ls -q --filter "$f" | xargs -r podman volume rm -f >/dev/null 2>&1 || true
  # kube play's volumes (emptyDirs, secret files) take the run's name as a prefix instead of its label.
  podman volume ls -q | grep "^$ROUNDS_DEPLOY_RUN-" | xargs -r podman volume rm -f >/dev/null 2>&1 || true
  podman network ls -q --filter "$f" | xargs -r podman network rm -f >/dev/null 2>&1 || true
  podman images -q --filter "$f" | xargs -r podman rmi -f >/dev/null 2>&1 || true
  if [ -z "$pause_before" ]; then
    podman images -q localhost/podman-pause | xargs -r podman rmi -f >/dev/null 2>&1 || true
  fi
  # The rolling update's HAProxy (test/deploy/support/haproxy.ts), ended by the pid it wrote.
  local haproxy_pid="${TMPDIR:-/tmp}/$ROUNDS_DEPLOY_RUN-haproxy.pid"
  if [ -s "$haproxy_pid" ]; then kill "$(head -n1 "$haproxy_pid")" 2>/dev/null || true; fi
  # Files the tests write for podman (generated secrets among them).
  rm -f "${TMPDIR:-/tmp}/$ROUNDS_DEPLOY_RUN"-* 2>/dev/null || true
  # podman 4.3's secrets take no label: the kube test lists the ones it made.
  local list="${TMPDIR:-/tmp}/$ROUNDS_DEPLOY_RUN.secrets"
  if [ -f "$list" ]; then
    xargs -r -n1 podman secret rm <"$list" >/dev/null 2>&1 || true
    rm -f "$list"
  fi
}
# kube play builds podman's pause image for its pods' infra containers: removed unless it was there.
pause_before=$(podman images -q localhost/podman-pause 2>/dev/null || true)
trap cleanup EXIT
start=$(date +%s)
npx jest --selectProjects deploy --runInBand "$@"
echo "deploy tier: $(($(date +%s) - start)) s"
