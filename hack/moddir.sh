#!/usr/bin/env bash
# Prints the directory of MODULE (at the version the go.mod in the current or -C directory requires)
# in the module cache, downloading it first: `go list -m -f {{.Dir}}` alone prints nothing when the
# module is not in the cache yet (a fresh machine), so never use it on its own.
#
#   hack/moddir.sh [-C DIR] MODULE
set -euo pipefail
dir=.
if [ "${1:-}" = -C ]; then dir=$2; shift 2; fi
mod=${1:?usage: hack/moddir.sh [-C DIR] MODULE}
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-modcacherw"
out=$(go -C "$dir" mod download -json "$mod")
path=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$out")
if [ -z "$path" ] || [ ! -d "$path" ]; then
  echo "hack/moddir.sh: could not download $mod (from $dir/go.mod):" >&2
  echo "$out" >&2
  exit 1
fi
echo "$path"
