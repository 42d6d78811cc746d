#!/usr/bin/env bash
# The demo: a simulated GPU cluster, the operator hosting LWS, a two-group serving.
#   hack/demo.sh up     build or reuse everything, start it all, deploy the demo serving
#   hack/demo.sh down   stop the operator and delete the simulated cluster
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-modcacherw"
SIM_DIR=${SIM_DIR:-$ROOT/.sim}
KCFG=$SIM_DIR/kubeconfig
PIDFILE=$SIM_DIR/operator.pid
LOG=$SIM_DIR/operator.log
log() { echo "[demo $(date +%T)] $*" >&2; }

stop_operator() {
  if [ -f "$PIDFILE" ]; then
    local pid; pid=$(cat "$PIDFILE")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$PIDFILE"
  fi
}

down() {
  stop_operator
  SIM_DIR=$SIM_DIR bash hack/sim.sh down
}

up() {
  local t0=$SECONDS
  log "building the control plane (cached after the first run; 16-22 min cold on 2 cores) and kubectl-llm"
  BIN=$(bash hack/build-control-plane.sh)
  go build -o bin/kubectl-llm ./cmd/kubectl-llm
  stop_operator
  log "starting the simulated cluster"
  mkdir -p "$SIM_DIR"
  SIM_DIR=$SIM_DIR bash hack/sim.sh up >/dev/null 2>"$SIM_DIR/demo-sim.log" || { cat "$SIM_DIR/demo-sim.log"; exit 1; }
  log "installing the CRDs, the operator's ServiceAccount, roles and webhook configurations"
  SIM_DIR=$SIM_DIR bash hack/sim.sh install embedded 2>"$SIM_DIR/demo-install.log" >/dev/null ||
    { cat "$SIM_DIR/demo-install.log"; exit 1; }
  log "starting kubectl llm operator --lws=embedded as its ServiceAccount (log: $LOG)"
  nohup bin/kubectl-llm operator --kubeconfig "$KCFG" --as system:serviceaccount:kubectl-llm-system:kubectl-llm-operator \
    --lws=embedded --leader-elect=false \
    --metrics-bind-address=127.0.0.1:18080 --health-probe-bind-address=127.0.0.1:18081 --webhook-port=19443 \
    >"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
  for _ in $(seq 300); do
    curl -sf http://127.0.0.1:18081/readyz >/dev/null 2>&1 && break
    kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { tail -20 "$LOG"; log "the operator exited"; exit 1; }
    sleep 0.2
  done
  log "deploying the demo serving: 2 groups × (leader + 1 worker), 1 GPU per pod"
  "$BIN/kubectl" --kubeconfig "$KCFG" apply --server-side -f config/samples/demo.yaml >/dev/null
  bin/kubectl-llm --kubeconfig "$KCFG" rollout status demo --timeout 3m
  log "ready after $((SECONDS - t0)) s"
  cat <<MSG

The demo serving runs on a simulated cluster of 4 nodes × 8 GPUs. Try:

  export KUBECONFIG=$KCFG PATH=$ROOT/bin:\$PATH
  kubectl llm get                                  # servings, groups ready / desired
  kubectl llm describe demo                        # serving -> revisions -> groups -> pods, with reasons
  kubectl llm set image demo vllm/vllm-openai:v0.12.0 && kubectl llm rollout status demo
  kubectl llm canary demo --image vllm/vllm-openai:v0.13.0 --groups 1
  kubectl llm rollout history demo && kubectl llm rollout undo demo
  kubectl llm scale demo --replicas 4
  kubectl delete pod demo-0-1                      # watch group 0 be recreated as a whole

The operator log is $LOG. Stop everything with: make demo-down
MSG
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
