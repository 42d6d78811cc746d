#!/usr/bin/env bash
# The tests of `make test` (after its generated-files, gofmt, vet and module-cache checks),
# arranged for wall time on a small machine. The simulated-cluster tier (test/e2e, ~19 min) spends
# most of its time waiting on the cluster (pods loading, rollouts stepping, quiet windows), so it
# starts first and runs beside everything else: the other packages, the fuzz targets, then the
# real-node tier (its own network namespace, control plane and kubelet). Run one after the other,
# they took 30 min; side by side, the e2e tier's end is the whole run's.
#
# The e2e tier's output goes to a file, printed when it ends, so the two logs do not interleave.
# The exit code is 0 only when every part passed; a summary line says which did not.
#
# Environment: KUBEBUILDER_ASSETS (required: the control-plane binaries, hack/build-control-plane.sh),
# GO_TEST_FLAGS (default -count=1 -timeout 30m), FUZZ_TIME (default 5000x: a count of executions, see the Makefile).
set -uo pipefail
cd "$(dirname "$0")/.."
: "${KUBEBUILDER_ASSETS:?set KUBEBUILDER_ASSETS to the control-plane binaries (hack/build-control-plane.sh prints their directory)}"
read -r -a flags <<<"${GO_TEST_FLAGS:--count=1 -timeout 30m}"
export REALNODE=skip # test/realnode's cluster tests need the real node: make test-realnode below

e2e_pkg=./test/e2e/
e2e_log=$(mktemp "${TMPDIR:-/tmp}/kubectl-llm-e2e-XXXXXX.log")
t0=$SECONDS
say() { printf '== hack/test.sh (%d s): %s\n' "$((SECONDS - t0))" "$*"; }

say "the simulated-cluster tier ($e2e_pkg) starts in the background; its output follows when it ends"
go test "${flags[@]}" "$e2e_pkg" >"$e2e_log" 2>&1 &
e2e_pid=$!
stop_e2e() {
	if kill -0 "$e2e_pid" 2>/dev/null; then
		pkill -TERM -P "$e2e_pid" 2>/dev/null || true
		kill -TERM "$e2e_pid" 2>/dev/null || true
	fi
	rm -f "$e2e_log"
}
trap stop_e2e EXIT

failed=()
mapfile -t others < <(go list ./... | grep -v '/test/e2e$')
say "every other package (${#others[@]})"
go test "${flags[@]}" "${others[@]}" || failed+=("go test (packages other than test/e2e)")

# One fuzz worker each: the other core stays with the e2e tier.
say "fuzz"
make --no-print-directory fuzz FUZZ_FLAGS=-parallel=1 || failed+=("make fuzz")

say "the real-node tier"
make --no-print-directory test-realnode || failed+=("make test-realnode")

say "waiting for the simulated-cluster tier"
wait "$e2e_pid"
e2e_rc=$?
echo "---- go test $e2e_pkg (exit $e2e_rc) ----"
cat "$e2e_log"
echo "---- end of go test $e2e_pkg ----"
((e2e_rc == 0)) || failed+=("go test $e2e_pkg")

if ((${#failed[@]} > 0)); then
	say "FAILED: $(printf '%s; ' "${failed[@]}")"
	exit 1
fi
say "every part passed"
