//go:build tools

// Package kwoktools pins kwok and kwokctl.
package kwoktools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/kwok/cmd/kwokctl"
)
