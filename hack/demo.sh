#!/usr/bin/env bash
# The demo: a simulated GPU cluster, the operator hosting LWS, a two-group serving.
#   hack/demo.sh up           build or reuse everything, start it all, deploy the demo serving
#   hack/demo.sh up --roles   the same with the prefill/decode sample (2 prefill + 6 decode groups),
#                             then a new image rolled out across both roles in lockstep
#   hack/demo.sh down         stop the operator and delete the simulated cluster
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
  if [ "$ROLES" = 1 ]; then deploy_roles; else deploy_single; fi
  log "ready after $((SECONDS - t0)) s"
  echo
  echo "The demo serving runs on a simulated cluster of 4 nodes × 8 GPUs. Try:"
  echo
  echo "  export KUBECONFIG=$KCFG PATH=$ROOT/bin:\$PATH"
  if [ "$ROLES" = 1 ]; then try_roles; else try_single; fi
  echo
  echo "The operator log is $LOG. Stop everything with: make demo-down"
}

deploy_single() {
  log "deploying the demo serving: 2 groups × (leader + 1 worker), 1 GPU per pod"
  "$BIN/kubectl" --kubeconfig "$KCFG" apply --server-side -f config/samples/demo.yaml >/dev/null
  bin/kubectl-llm --kubeconfig "$KCFG" rollout status demo --timeout 3m
}

try_single() {
  cat <<'MSG'
  kubectl llm get                                  # servings, groups ready / desired
  kubectl llm describe demo                        # serving -> revisions -> groups -> pods, with reasons
  kubectl llm set image demo vllm/vllm-openai:v0.12.0 && kubectl llm rollout status demo
  kubectl llm canary demo --image vllm/vllm-openai:v0.13.0 --groups 1
  kubectl llm rollout history demo && kubectl llm rollout undo demo
  kubectl llm scale demo --replicas 4
  kubectl delete pod demo-0-1                      # watch group 0 be recreated as a whole
MSG
}

# deploy_roles deploys the prefill/decode sample, then rolls a new image out across both roles:
# the planner's steps first (kubectl llm rollout plan), then the rollout as it happens.
deploy_roles() {
  local k=(bin/kubectl-llm --kubeconfig "$KCFG")
  log "deploying the roles demo: 2 prefill + 6 decode groups × (leader + 1 worker), 1 GPU per pod"
  "$BIN/kubectl" --kubeconfig "$KCFG" apply --server-side -f config/samples/demo-pd.yaml >/dev/null
  "${k[@]}" rollout status demo-pd --timeout 3m
  "${k[@]}" get demo-pd
  log "rolling out a new image across both roles together: the plan, then the rollout"
  "${k[@]}" set image demo-pd vllm/vllm-openai:v0.12.0
  # The operator records the new revision within a pass; until then the plan names the spec.
  for _ in $(seq 50); do
    [ -n "$("$BIN/kubectl" --kubeconfig "$KCFG" get ms demo-pd -o jsonpath='{.status.plan.steps}' 2>/dev/null | grep -v '^0$')" ] && break
    sleep 0.2
  done
  "${k[@]}" rollout plan demo-pd
  "${k[@]}" rollout status demo-pd --timeout 5m
  "${k[@]}" describe demo-pd | sed -n '1,/^Age:/p'
}

try_roles() {
  cat <<'MSG'
  kubectl llm get demo-pd                          # ready / desired per role
  kubectl llm describe demo-pd                     # each role's groups, the planner's step (status.plan)
  kubectl llm watch demo-pd                        # the live view: roles as sections, the step line
  kubectl llm set image demo-pd vllm/vllm-openai:v0.13.0 && kubectl llm rollout plan demo-pd
  kubectl llm canary demo-pd --image vllm/vllm-openai:v0.13.0 --groups 1    # one group of every role
  kubectl llm rollout pause demo-pd && kubectl llm rollout resume demo-pd
  kubectl llm rollout history demo-pd && kubectl llm rollout undo demo-pd
  kubectl llm scale demo-pd --role decode --replicas 8
  kubectl llm restart demo-pd --role prefill --group 0
MSG
}

ROLES=0
case "${1:-up} ${2:-}" in
  "up "|"up --roles") [ "${2:-}" = --roles ] && ROLES=1; up ;;
  "down ") down ;;
  *) echo "usage: $0 up [--roles] | down" >&2; exit 2 ;;
esac
