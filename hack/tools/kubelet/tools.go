//go:build tools

// Package kubelettools pins the kubelet command that hack/build-control-plane.sh kubelet builds.
package kubelettools

import (
	_ "k8s.io/kubernetes/cmd/kubelet"
)
