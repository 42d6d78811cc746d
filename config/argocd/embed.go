// Package argocd holds the Argo CD health check of ModelServing (health.lua) and its test.
package argocd

import _ "embed"

// HealthLua is the Argo CD resource health check for serving.kubectl-llm.dev/ModelServing.
//
//go:embed health.lua
var HealthLua string
