#!/usr/bin/env bash
# Builds the control-plane binaries the tests and the simulated cluster run, from the Go module proxy:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl  (k8s.io/kubernetes, hack/tools/k8s)
#   etcd                                                              (go.etcd.io/etcd/server/v3, hack/tools/etcd)
#   kwok, kwokctl + kwok's stock stage files                          (sigs.k8s.io/kwok, hack/tools/kwok)
# into a cache directory outside the checkout, keyed by the tool modules, Go version, OS and architecture.
# A complete cache directory is reused at once. Prints the directory on stdout (everything else goes to stderr).
#
#   KUBECTL_LLM_CACHE   cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-llm)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=$HERE/tools
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-modcacherw"

version_of() { # version_of MODULE DIR: the version the tool module requires
  awk -v m="$1" '$1 == m {print $2; exit} $1 == "require" && $2 == m {print $3; exit}' "$2/go.mod"
}
K8S=$(version_of k8s.io/kubernetes "$TOOLS/k8s")
ETCD=$(version_of go.etcd.io/etcd/server/v3 "$TOOLS/etcd")
KWOK=$(version_of sigs.k8s.io/kwok "$TOOLS/kwok")
SUM=$(cat "$TOOLS"/{etcd,k8s,kwok}/go.sum "$TOOLS"/{etcd,k8s,kwok}/go.mod | sha256sum | cut -c1-10)
ROOT=${KUBECTL_LLM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-llm}/tools
KEY="k8s-$K8S-etcd-$ETCD-kwok-$KWOK-$(go env GOVERSION)-$(go env GOOS)-$(go env GOARCH)-$SUM"
DEST=$ROOT/$KEY
if [ -f "$DEST/.complete" ]; then echo "$DEST"; exit 0; fi

log() { echo "[build-control-plane $(date +%T)] $*" >&2; }
mkdir -p "$ROOT"
TMP=$(mktemp -d "$ROOT/.build-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
t0=$SECONDS

# Without the version stamps the binaries report v0.0.0-master and some clients refuse them.
minor=$(echo "$K8S" | cut -d. -f2)
LDF="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDF="$LDF -X $p.gitVersion=$K8S -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
log "building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $K8S (16-22 minutes on 2 cores when cold)"
go build -C "$TOOLS/k8s" -trimpath -ldflags="$LDF" -o "$TMP/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
log "building etcd $ETCD"
go build -C "$TOOLS/etcd" -trimpath -ldflags="-s -w" -o "$TMP/etcd" go.etcd.io/etcd/server/v3
log "building kwok, kwokctl $KWOK"
go build -C "$TOOLS/kwok" -trimpath -ldflags="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK" -o "$TMP/" \
  sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl
STAGES=$(bash "$HERE/moddir.sh" -C "$TOOLS/kwok" sigs.k8s.io/kwok)/kustomize/stage
mkdir -p "$TMP/kwok-stages"
cp "$STAGES/node/fast/node-initialize.yaml" "$STAGES/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml" \
  "$STAGES/pod/fast/pod-ready.yaml" "$STAGES/pod/fast/pod-complete.yaml" "$STAGES/pod/fast/pod-delete.yaml" \
  "$TMP/kwok-stages/"
chmod -R u+w "$TMP"
touch "$TMP/.complete"
rm -rf "$DEST"; mv "$TMP" "$DEST"; trap - EXIT
log "done in $((SECONDS - t0))s: $DEST"
echo "$DEST"
