// Package v1alpha1 holds the ModelServing API (group serving.kubectl-llm.dev): types with their
// schema markers (defaults, CEL rules, printer columns), condition types and reasons, and the
// labels and annotations the operator and the plugin agree on. It imports only Kubernetes API packages.
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +groupName=serving.kubectl-llm.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the ModelServing API.
	GroupVersion = schema.GroupVersion{Group: "serving.kubectl-llm.dev", Version: "v1alpha1"}

	// SchemeGroupVersion is GroupVersion under the name generated code (the apply
	// configurations in applyconfiguration/) expects.
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder registers the API types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the API types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&ModelServing{}, &ModelServingList{})
}
