//go:build tools

// Package goreleasertools pins goreleaser.
package goreleasertools

import _ "github.com/goreleaser/goreleaser/v2"
