package operator

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

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

// ValidateSpec checks what the CRD's schema leaves to the operator, naming each field: the node
// selector's keys and values (label syntax), which would otherwise only fail when LeaderWorkerSet
// creates the StatefulSets.
func ValidateSpec(ms *v1.ModelServing) error {
	var errs field.ErrorList
	fld := field.NewPath("spec", "scheduling", "nodeSelector")
	for k, val := range ms.Spec.Scheduling.NodeSelector {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(fld.Key(k), k, "not a label key: "+msg))
		}
		for _, msg := range validation.IsValidLabelValue(val) {
			errs = append(errs, field.Invalid(fld.Key(k), val, "not a label value: "+msg))
		}
	}
	return errs.ToAggregate()
}
