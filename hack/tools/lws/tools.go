//go:build tools

// Package lwstools pins the upstream LeaderWorkerSet manager (sigs.k8s.io/lws/cmd), run beside the
// simulated cluster to measure LWS alone against kubectl-llm and to test --lws=external.
package lwstools

import (
	_ "sigs.k8s.io/lws/cmd"
)
