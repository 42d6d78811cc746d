//go:build tools

// Package etcdtools pins the etcd server built for tests.
package etcdtools

import _ "go.etcd.io/etcd/server/v3"
