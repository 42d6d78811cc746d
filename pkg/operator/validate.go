package operator

import (
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

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
