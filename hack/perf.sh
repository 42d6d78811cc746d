#!/usr/bin/env bash
# The runs of docs/performance.md's goal table, one after the other, on the simulated cluster:
#
#   bash hack/perf.sh [all|side-by-side|idle|churn]     (make perf runs all: about 100 minutes)
#
# side-by-side  the burst of 100, the operator's own steps among 100 converged, CPU and RSS,
#               `kubectl llm get` of 1000 and RSS beside 5000 unrelated objects (two rounds)
# idle          the idle recovery and rollout, and servings created one at a time beside them,
#               eight short rounds a side
# churn         the recovery and rollout while a burst of 150 is deleted, eight rounds a side
#
# Each run's table goes to $PERF_DIR/<run>.md (perf-results/ by default, git-ignored) and, for
# the idle and churn runs, its rounds to <run>.json, which `go run ./hack/scale -pool` pools with
# other runs of the same build (docs/scale-runs/ keeps the ones the page cites). Nothing else may
# run on the machine meanwhile: the rows are ratios of two sides measured one after the other.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
out=${PERF_DIR:-perf-results}
case "$what" in
all | side-by-side | idle | churn) ;;
*)
	echo "usage: bash hack/perf.sh [all|side-by-side|idle|churn]: '$what' is not a run" >&2
	exit 2
	;;
esac
mkdir -p "$out"
go build -o "$out/scale" ./hack/scale

run() { # run NAME ARGS…: one run of the harness, its table to NAME.md, its log to NAME.log
	local name=$1
	shift
	echo "$(date -u +%H:%M:%S) $name: hack/scale $*" >&2
	"$out/scale" "$@" >"$out/$name.md" 2>"$out/$name.log" || {
		echo "$name failed; its log: $out/$name.log" >&2
		tail -5 "$out/$name.log" >&2
		return 1
	}
	echo "$(date -u +%H:%M:%S) $name: $out/$name.md" >&2
}

if [[ $what == all || $what == side-by-side ]]; then
	run side-by-side -n 100 -reps 5 -rounds 2 -single 20 -get 1000 -unrelated 5000
fi
if [[ $what == all || $what == idle ]]; then
	run idle -idle-only -reps 12 -rounds 8 -single 8 -raw "$out/idle.json"
fi
if [[ $what == all || $what == churn ]]; then
	run churn -churn-only -n 150 -rounds 8 -raw "$out/churn.json"
fi
