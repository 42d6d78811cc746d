#!/usr/bin/env bash
# Simulated GPU cluster for end-to-end tests and the demo: kwokctl (binary runtime) runs
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, all built locally
# by hack/build-control-plane.sh; kwok fakes GPU nodes and the pods on them (see
# hack/sim/kwokctl.yaml for the pod lifecycle).
#
# Usage: hack/sim.sh up|down|status|env
#   up      (re)create the cluster, add the GPU nodes, wait until pods can be created;
#           prints the kubeconfig path on stdout
#   down    delete the cluster and stop its processes
#   status  the cluster's components and nodes
#   env     prints `export KUBECONFIG=...`
#   install [embedded|default]
#           applies what `kubectl llm install --lws=VARIANT` applies (config/install/VARIANT.yaml:
#           CRDs, namespace, the operator's ServiceAccount and roles, webhook configurations)
#           except the operator Deployment, whose pod could not run on fake nodes; then waits
#           until the CRDs are served. Run the operator beside the cluster as its ServiceAccount:
#             kubectl llm operator --as=system:serviceaccount:kubectl-llm-system:kubectl-llm-operator
#
# Environment:
#   SIM_DIR    state directory (default <repo>/.sim): kubeconfig, rendered config, kwok workdir
#   SIM_NAME   cluster name (default kubectl-llm-sim)
#   SIM_NODES  number of fake GPU nodes (default 4), named gpu-node-0, gpu-node-1, ...
#   SIM_GPUS   nvidia.com/gpu per node (default 8)
#   SIM_BIN_DIR  directory of the binaries (default: output of hack/build-control-plane.sh)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SIM_DIR=${SIM_DIR:-$ROOT/.sim}
case $SIM_DIR in /*) ;; *) SIM_DIR=$PWD/$SIM_DIR ;; esac
SIM_NAME=${SIM_NAME:-kubectl-llm-sim}
SIM_NODES=${SIM_NODES:-4}
SIM_GPUS=${SIM_GPUS:-8}

# kwokctl keeps its clusters (pids, pki, logs, configs) under $KWOK_WORKDIR/clusters/<name>
# and reads $KWOK_WORKDIR/kwok.yaml: keep all of it in our state directory, never in ~/.kwok.
export KWOK_WORKDIR=$SIM_DIR/kwok
KUBECONFIG_PATH=$SIM_DIR/kubeconfig
CONFIG=$SIM_DIR/kwokctl.yaml
CLUSTER_DIR=$KWOK_WORKDIR/clusters/$SIM_NAME

log() { echo "[sim $(date +%T.%3N)] $*" >&2; }
die() { log "$*"; exit 1; }

bin_dir() {
  if [ -n "${SIM_BIN_DIR:-}" ]; then echo "$SIM_BIN_DIR"; return; fi
  local dir
  dir=$(bash "$ROOT/hack/build-control-plane.sh") || die "hack/build-control-plane.sh failed"
  echo "$dir"
}

BIN=""
# kwokctl runs `kubectl` from PATH before its kubectlBinary option (and /usr/bin/kubectl
# is an old client): put ours first. `9>&-`: the components kwokctl starts must not
# inherit the lock of up (they would hold it forever).
kwokctl() { PATH="$BIN:$PATH" "$BIN/kwokctl" --name "$SIM_NAME" "$@" 9>&-; }
kubectl() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG_PATH" "$@"; }

render() {
  local tmpl
  tmpl=$(<"$ROOT/hack/sim/kwokctl.yaml")
  printf '%s\n' "${tmpl//'${BIN_DIR}'/$BIN}" >"$CONFIG"
}

# pids of the cluster's components, from kwokctl's pid files
component_pids() {
  local f
  for f in "$CLUSTER_DIR"/pids/*.pid; do
    [ -f "$f" ] && printf '%s\n' "$(<"$f")" # pid files have no trailing newline
  done
  return 0
}

# running PID: the process is one of this cluster's components (kwokctl runs them from
# $CLUSTER_DIR/bin, so a reused pid is not mistaken for one) and is not a zombie (the
# components are detached: once killed, they wait for PID 1 to reap them).
running() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ] &&
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF "$CLUSTER_DIR/"
}

delete_cluster() {
  [ -d "$CLUSTER_DIR" ] || return 0
  local pids p alive i
  pids=$(component_pids)
  log "deleting cluster $SIM_NAME"
  # --config: the rendered file, so that kwokctl does not look for its defaults elsewhere;
  # --kubeconfig: else kwokctl edits ~/.kube/config.
  [ -f "$CONFIG" ] || render
  kwokctl --config "$CONFIG" delete cluster --kubeconfig "$KUBECONFIG_PATH" >&2 ||
    log "kwokctl delete cluster failed; stopping the components by pid"
  # kwokctl sends SIGKILL; make sure every component is gone before returning.
  for i in $(seq 50); do
    alive=""
    for p in $pids; do running "$p" && alive="$alive $p"; done
    [ -z "$alive" ] && break
    [ "$i" = 20 ] && for p in $alive; do kill -9 "$p" 2>/dev/null || true; done
    sleep 0.1
  done
  [ -z "$alive" ] || die "processes still running after delete:$alive"
  rm -rf "$CLUSTER_DIR"
}

# fail MESSAGE: the cluster could not be made; delete what there is and exit.
fail() {
  log "$*"
  if [ -d "$CLUSTER_DIR/logs" ]; then
    log "last lines of the component logs:"
    tail -n 5 "$CLUSTER_DIR"/logs/*.log >&2 || true
  fi
  delete_cluster || true
  exit 1
}

elapsed() { awk -v t0="$1" -v t1="$(date +%s.%N)" 'BEGIN{printf "%.1fs", t1-t0}'; }

up() {
  local t0 n p
  t0=$(date +%s.%N)
  BIN=$(bin_dir)
  for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kwokctl; do
    [ -x "$BIN/$b" ] || die "missing $BIN/$b"
  done
  mkdir -p "$SIM_DIR"
  # kwokctl gives each component the first free port counting down from 32767, so two
  # clusters made at the same time get the same ports. One up at a time on this machine:
  # the lock is held until every component has bound its ports.
  exec 9>>"${TMPDIR:-/tmp}/kubectl-llm-sim-$(id -u).lock"
  flock -w 600 9 || die "another hack/sim.sh up held the lock for 10 minutes"
  delete_cluster
  render
  rm -f "$KUBECONFIG_PATH"
  log "creating cluster $SIM_NAME (state in $SIM_DIR)"
  # create only logs an error when --wait runs out: check /readyz ourselves.
  kwokctl --config "$CONFIG" create cluster --kubeconfig "$KUBECONFIG_PATH" --wait 2m >&2 ||
    fail "kwokctl create cluster failed"
  kubectl get --raw /readyz >/dev/null || fail "kube-apiserver is not ready"
  log "adding $SIM_NODES nodes with $SIM_GPUS nvidia.com/gpu each"
  kwokctl --config "$CONFIG" scale node gpu-node --replicas "$SIM_NODES" --serial-length 1 \
    --param ".gpus=$SIM_GPUS" >&2 || fail "kwokctl scale node failed"
  # kube-scheduler only binds to Ready nodes; pods are refused until the controller
  # manager has created the "default" ServiceAccount.
  for _ in $(seq 600); do
    n=$(kubectl get nodes --no-headers 2>/dev/null | awk '$2 == "Ready"' | wc -l)
    if [ "$n" -ge "$SIM_NODES" ] && kubectl -n default get serviceaccount default >/dev/null 2>&1; then
      for p in $(component_pids); do
        running "$p" || fail "component pid $p exited"
      done
      flock -u 9
      log "cluster ready after $(elapsed "$t0"); $SIM_NODES nodes Ready"
      echo "$KUBECONFIG_PATH"
      return 0
    fi
    sleep 0.1
  done
  kubectl get nodes >&2 || true
  fail "nodes not Ready or no default ServiceAccount after 60s"
}

down() {
  local t0
  t0=$(date +%s.%N)
  if [ ! -d "$CLUSTER_DIR" ]; then
    log "no cluster $SIM_NAME in $SIM_DIR"
  else
    BIN=$(bin_dir)
    delete_cluster
    log "cluster $SIM_NAME deleted after $(elapsed "$t0")"
  fi
  rm -f "$KUBECONFIG_PATH" "$CONFIG"
  rmdir "$KWOK_WORKDIR/clusters" "$KWOK_WORKDIR" 2>/dev/null || true
  rm -rf "$KWOK_WORKDIR/cache"
  rmdir "$KWOK_WORKDIR" "$SIM_DIR" 2>/dev/null || true
}

# The install render of VARIANT without its Deployment documents. A document's lines are kept
# in an array, not joined into one string: appending each line to a string copies it whole, and
# the largest document (a CRD of 1.3 MB, 17,909 lines) took 30 s that way on an idle 2-core
# machine, 42 s of CPU while a perf run shared it (under 0.1 s this way).
render_without_deployment() {
  awk 'function flush(   i) { if (n && !deployment) { print "---"; for (i = 1; i <= n; i++) print lines[i] } n = 0; deployment = 0 }
       /^---$/ { flush(); next } { lines[++n] = $0; if ($0 == "kind: Deployment") deployment = 1 } END { flush() }' "$ROOT/config/install/$1.yaml"
}

install() {
  local variant=${1:-embedded} i
  [ -f "$ROOT/config/install/$variant.yaml" ] || die "no install variant $variant (embedded or default)"
  [ -f "$KUBECONFIG_PATH" ] || die "no cluster in $SIM_DIR: run hack/sim.sh up first"
  BIN=$(bin_dir)
  render_without_deployment "$variant" | kubectl apply --server-side --field-manager=kubectl-llm -f - >&2 ||
    die "applying config/install/$variant.yaml failed"
  for i in $(seq 150); do
    kubectl get --raw /apis/serving.kubectl-llm.dev/v1alpha1 >/dev/null 2>&1 &&
      kubectl get --raw /apis/leaderworkerset.x-k8s.io/v1 >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  die "the CRDs are not served 30s after install"
}

status() {
  if [ ! -d "$CLUSTER_DIR" ]; then
    echo "cluster $SIM_NAME: not running (state dir $SIM_DIR)"
    return 1
  fi
  BIN=$(bin_dir)
  echo "cluster $SIM_NAME, KUBECONFIG=$KUBECONFIG_PATH"
  local f p
  for f in "$CLUSTER_DIR"/pids/*.pid; do
    [ -f "$f" ] || continue
    p=$(cat "$f")
    ps -o rss=,etime= -p "$p" 2>/dev/null |
      awk -v c="$(basename "$f" .pid)" -v p="$p" '{printf "  %-24s pid=%-8s RSS=%6.1f MiB up=%s\n", c, p, $1/1024, $2}' ||
      echo "  $(basename "$f" .pid): not running"
  done
  kubectl get nodes -o custom-columns='NAME:.metadata.name,STATUS:.status.conditions[?(@.type=="Ready")].status,GPU:.status.allocatable.nvidia\.com/gpu,ZONE:.metadata.labels.topology\.kubernetes\.io/zone,PRODUCT:.metadata.labels.nvidia\.com/gpu\.product'
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  env) echo "export KUBECONFIG=$KUBECONFIG_PATH" ;;
  install) install "${2:-embedded}" ;;
  *) echo "usage: $0 up|down|status|env|install [embedded|default]" >&2; exit 2 ;;
esac
