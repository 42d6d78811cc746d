#!/usr/bin/env bash
# Builds the upstream LeaderWorkerSet manager (sigs.k8s.io/lws/cmd, the version hack/tools/lws
# pins, the same as go.mod's) from the Go module proxy into the tools cache, keyed by that module,
# the Go version, OS and architecture, and prints the binary's path. It is the baseline of the
# side-by-side measurements (hack/scale) and the LWS of the --lws=external end-to-end tests.
#
#   KUBECTL_LLM_CACHE   cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-llm)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
MOD=$HERE/tools/lws
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-modcacherw"

LWS=$(awk '$1 == "require" && $2 == "sigs.k8s.io/lws" {print $3; exit} $1 == "sigs.k8s.io/lws" {print $2; exit}' "$MOD/go.mod")
WANT=$(awk '$1 == "sigs.k8s.io/lws" {print $2; exit}' "$HERE/../go.mod")
if [ "$LWS" != "$WANT" ]; then
  echo "hack/tools/lws pins sigs.k8s.io/lws $LWS but go.mod requires $WANT: make them equal" >&2
  exit 1
fi
SUM=$(cat "$MOD/go.mod" "$MOD/go.sum" | sha256sum | cut -c1-10)
ROOT=${KUBECTL_LLM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-llm}/tools
DEST=$ROOT/lws-$LWS-$(go env GOVERSION)-$(go env GOOS)-$(go env GOARCH)-$SUM
if [ -x "$DEST/lws-manager" ]; then echo "$DEST/lws-manager"; exit 0; fi

mkdir -p "$ROOT"
TMP=$(mktemp -d "$ROOT/.build-lws-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
t0=$SECONDS
echo "[build-lws-manager $(date +%T)] building the LeaderWorkerSet manager $LWS (1-6 minutes when cold)" >&2
go build -C "$MOD" -trimpath -ldflags="-s -w -X sigs.k8s.io/lws/pkg/version.GitVersion=$LWS" -o "$TMP/lws-manager" sigs.k8s.io/lws/cmd
rm -rf "$DEST"; mv "$TMP" "$DEST"; trap - EXIT
echo "[build-lws-manager $(date +%T)] done in $((SECONDS - t0))s: $DEST" >&2
echo "$DEST/lws-manager"
