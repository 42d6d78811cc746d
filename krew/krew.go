// Package krew holds the krew plugin manifest template (llm.yaml) and its offline checks.
package krew

import _ "embed"

// Manifest is llm.yaml: a krew-release-bot template the release fills in.
//
//go:embed llm.yaml
var Manifest string
