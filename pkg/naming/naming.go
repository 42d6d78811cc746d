// Package naming owns the names, labels and defaults that are derived from a ModelServing and
// that more than the operator needs to know: the Service in front of the leaders and the
// endpoint it gives, the pod selector, how a LeaderWorkerSet or StatefulSet name maps back to
// its serving, the engine container's name and the engine image a spec runs. The operator
// makes the objects with these names; the CLI and the live view find and show them.
//
// It is pure (no clients) and imports only the API package: never pkg/operator, pkg/status,
// pkg/cli or pkg/tui, which all import it.
package naming

import (
	"fmt"
	"strings"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// ServiceName is the name of the Service in front of a serving's leaders. (The LeaderWorkerSet
// takes the serving's own name for its headless Service.)
func ServiceName(serving string) string { return serving + "-api" }

// Endpoint is the in-cluster address of a serving: with spec.roles, its decode role's (the
// decode servers answer the clients; a router that pairs prefill and decode reads every role's
// Service instead).
func Endpoint(ms *v1.ModelServing) string {
	if ms.Spec.Role(v1.RoleDecode) != nil {
		return RoleEndpoint(ms, v1.RoleDecode)
	}
	return fmt.Sprintf("%s.%s.svc:%d", ServiceName(ms.Name), ms.Namespace, ms.Spec.Engine.Port)
}

// RoleEndpoint is the in-cluster address of a role's leaders, through its Service.
func RoleEndpoint(ms *v1.ModelServing, role v1.RoleName) string {
	return fmt.Sprintf("%s.%s.svc:%d", RoleServiceName(ms.Name, role), ms.Namespace, ms.Spec.Engine.Port)
}

// PodSelector selects every pod of a serving.
func PodSelector(serving string) string { return v1.LabelName + "=" + serving }

// ServingOfWorkload is the serving a LeaderWorkerSet or StatefulSet belongs to, by name, or "":
// the LeaderWorkerSet and its leader StatefulSet take the serving's name, and group N's worker
// StatefulSet is named <name>-N (LeaderWorkerSet's naming). As a serving's name cannot end in
// -<number> (the CRD refuses it), the two never mix.
func ServingOfWorkload(kind, name string) string {
	switch kind {
	case "LeaderWorkerSet":
		return name
	case "StatefulSet":
		if i := strings.LastIndexByte(name, '-'); i > 0 && allDigits(name[i+1:]) {
			return name[:i]
		}
		return name
	}
	return ""
}

// ServingOfService is the serving whose Service a Service name would be (<name>-api), or "".
func ServingOfService(name string) string {
	if s, ok := strings.CutSuffix(name, "-api"); ok && s != "" {
		return s
	}
	return ""
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
