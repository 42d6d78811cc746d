package v1alpha1_test

import (
	"slices"
	"testing"

	"k8s.io/client-go/discovery"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// Volcano's kthena also ships a ModelServing kind: the API server serves ours under a short name
// of its own, `lms`, besides `ms`, and the category `llm`.
func TestTheAPIServesADistinctShortName(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	list, err := dc.ServerResourcesForGroupVersion(v1.GroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.APIResources {
		if r.Name != "modelservings" {
			continue
		}
		if !slices.Contains(r.ShortNames, "lms") || !slices.Contains(r.Categories, "llm") {
			t.Errorf("modelservings serves short names %v and categories %v; want lms among them, and llm", r.ShortNames, r.Categories)
		}
		return
	}
	t.Fatalf("the API server does not serve modelservings in %s", v1.GroupVersion)
}
