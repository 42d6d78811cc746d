#!/usr/bin/env bash
# Fails when a script or test reads a module's directory with `go list -m ... {{.Dir}}`, which
# prints nothing for a module not yet in the module cache (a fresh machine). Use hack/moddir.sh
# (downloads first) or a committed copy instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=$(git grep -nE 'go"?,? *"?list"?.*-m|\{\{ *\.Dir *\}\}' -- ':!hack/moddir.sh' ':!hack/check-modcache-reads.sh' ':!*.md' || true)
if [ -n "$bad" ]; then
  echo "these lines read the module cache without downloading first (use hack/moddir.sh):"
  echo "$bad"
  exit 1
fi
