#!/usr/bin/env bash
# Builds the control-plane binaries the tests and the simulated cluster run, from the Go module proxy:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl  (k8s.io/kubernetes, hack/tools/k8s)
#   etcd                                                              (go.etcd.io/etcd/server/v3, hack/tools/etcd)
#   kwok, kwokctl + kwok's stock stage files                          (sigs.k8s.io/kwok, hack/tools/kwok)
# into a cache directory outside the checkout, keyed by the tool modules, Go version, OS and architecture.
# A complete cache directory is reused at once. Prints the directory on stdout (everything else goes to stderr).
#
#   hack/build-control-plane.sh kubelet
#       also builds kubelet (hack/tools/kubelet, the same k8s.io/kubernetes version) into that directory,
#       for the real-node cluster (hack/realnode.sh); reused while hack/tools/kubelet is unchanged.
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
log() { echo "[build-control-plane $(date +%T)] $*" >&2; }

# kubelet: its own wrapper module (so adding it leaves the control-plane key alone), pinned to the
# same Kubernetes version: kubelet 1.37 talks to Debian's containerd 1.6 only through a fallback that
# 1.38 removes, and a skewed kubelet is not what the tests mean to run.
build_kubelet() {
  local kver ksum tmp t0=$SECONDS
  kver=$(version_of k8s.io/kubernetes "$TOOLS/kubelet")
  [ "$kver" = "$K8S" ] || { log "hack/tools/kubelet requires k8s.io/kubernetes $kver, the control plane $K8S: align them"; exit 1; }
  ksum=$(cat "$TOOLS/kubelet/go.mod" "$TOOLS/kubelet/go.sum" | sha256sum | cut -c1-10)
  if [ -x "$DEST/kubelet" ] && [ -f "$DEST/.kubelet-$ksum" ]; then return 0; fi
  log "building kubelet $K8S (about 6 minutes on 2 cores when cold, 2 GiB of memory)"
  tmp=$(mktemp -d "$ROOT/.build-kubelet-XXXXXX")
  # shellcheck disable=SC2064 # expand now: tmp is local
  trap "rm -rf '$tmp'" EXIT
  go build -C "$TOOLS/kubelet" -trimpath -ldflags="$LDF" -o "$tmp/kubelet" k8s.io/kubernetes/cmd/kubelet
  rm -f "$DEST"/.kubelet-*
  mv "$tmp/kubelet" "$DEST/kubelet"
  touch "$DEST/.kubelet-$ksum"
  rm -rf "$tmp"; trap - EXIT
  log "kubelet built in $((SECONDS - t0))s: $DEST/kubelet"
}

# Without the version stamps the binaries report v0.0.0-master and some clients refuse them.
minor=$(echo "$K8S" | cut -d. -f2)
LDF="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDF="$LDF -X $p.gitVersion=$K8S -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done

if [ -f "$DEST/.complete" ]; then
  [ "${1:-}" = kubelet ] && build_kubelet
  echo "$DEST"; exit 0
fi
mkdir -p "$ROOT"
TMP=$(mktemp -d "$ROOT/.build-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
t0=$SECONDS
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
[ "${1:-}" = kubelet ] && build_kubelet
echo "$DEST"
