#!/usr/bin/env bash
# Validates .goreleaser.yaml with goreleaser itself, built from the module proxy by the tool
# module hack/release/tools (kept out of the main go.mod) into the same cache as the control
# plane. Publishes nothing.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-modcacherw"
MOD=$ROOT/hack/release/tools
VERSION=$(awk '$1 == "require" && $2 == "github.com/goreleaser/goreleaser/v2" {print $3}' "$MOD/go.mod")
DIR=${KUBECTL_LLM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-llm}/tools/goreleaser-$VERSION-$(go env GOVERSION)-$(go env GOOS)-$(go env GOARCH)
if [ ! -x "$DIR/goreleaser" ]; then
  echo "building goreleaser $VERSION (several minutes the first time)" >&2
  mkdir -p "$DIR"
  go build -C "$MOD" -trimpath -ldflags="-s -w" -o "$DIR/goreleaser.tmp" github.com/goreleaser/goreleaser/v2
  mv "$DIR/goreleaser.tmp" "$DIR/goreleaser"
fi
cd "$ROOT"
"$DIR/goreleaser" check
