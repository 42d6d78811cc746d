package operator

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
)

// The caches hold only what is ours (or, with embedded LWS, what LWS made): a cluster with
// thousands of unrelated pods, Services or ControllerRevisions must not grow the operator. Every
// kind either cache holds is selected by a label, and the selector matches our children (or
// LWS's) and not an unrelated object.
func TestTheCachesHoldOnlyOurObjects(t *testing.T) {
	ours := labels.Set{v1.LabelName: "qwen", v1.LabelManagedBy: v1.ManagedByValue, revision.LabelHash: "abc"}
	lwsMade := labels.Set{"leaderworkerset.sigs.k8s.io/name": "qwen"}
	unrelated := labels.Set{"app": "web", "controller-revision-hash": "123"}
	kind := func(o client.Object) string { return fmt.Sprintf("%T", o) }
	for _, tc := range []struct {
		cache string
		byObj map[client.Object]selectorOf
		match labels.Set
	}{
		{"main, LWS external", selectors(mainCacheOptions(LWSExternal).ByObject), ours},
		{"main, LWS embedded", selectors(mainCacheOptions(LWSEmbedded).ByObject), lwsMade},
		{"children", selectors(childrenCacheOptions("").ByObject), ours},
	} {
		if len(tc.byObj) == 0 {
			t.Fatalf("%s: no kind selected", tc.cache)
		}
		for obj, sel := range tc.byObj {
			if sel.field {
				continue // selected by a field (FailedCreate events)
			}
			if sel.label == nil || sel.label.Empty() {
				t.Errorf("%s cache holds every %s", tc.cache, kind(obj))
				continue
			}
			if !sel.label.Matches(tc.match) {
				t.Errorf("%s cache: %s selector %q does not hold ours %v", tc.cache, kind(obj), sel.label, tc.match)
			}
			if sel.label.Matches(unrelated) {
				t.Errorf("%s cache: %s selector %q holds unrelated objects", tc.cache, kind(obj), sel.label)
			}
		}
	}
}

type selectorOf struct {
	label labels.Selector
	field bool
}

func selectors(m map[client.Object]cache.ByObject) map[client.Object]selectorOf {
	out := map[client.Object]selectorOf{}
	for k, v := range m {
		out[k] = selectorOf{label: v.Label, field: v.Field != nil && !v.Field.Empty()}
	}
	return out
}

// ByObject is keyed by pointers: two entries for one kind leave the selector to map order.
func TestEachCachedKindIsSelectedOnce(t *testing.T) {
	for name, o := range map[string]cache.Options{
		"main, LWS external": mainCacheOptions(LWSExternal), "main, LWS embedded": mainCacheOptions(LWSEmbedded),
		"children": childrenCacheOptions(""),
	} {
		seen := map[string]bool{}
		for obj := range o.ByObject {
			k := fmt.Sprintf("%T", obj)
			if seen[k] {
				t.Errorf("%s cache: %s is selected twice", name, k)
			}
			seen[k] = true
		}
	}
}
