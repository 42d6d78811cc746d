package operator

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// What --cascade=orphan leaves (no controller, our labels) is adopted; anything else with the
// name is not.
func TestOnlyOrphansWithOurLabelsAreAdoptable(t *testing.T) {
	ms := fixtures.Serving("qwen", "ns").Obj()
	ours := map[string]string{v1.LabelName: "qwen", v1.LabelManagedBy: v1.ManagedByValue}
	now := metav1.Now()
	cases := []struct {
		name string
		meta metav1.ObjectMeta
		want bool
	}{
		{"orphaned by --cascade=orphan", metav1.ObjectMeta{Labels: ours}, true},
		{"a non-controller owner only", metav1.ObjectMeta{Labels: ours, OwnerReferences: []metav1.OwnerReference{{Kind: "ConfigMap", Name: "x", UID: "u"}}}, true},
		{"made by hand, no labels", metav1.ObjectMeta{}, false},
		{"another serving's name label", metav1.ObjectMeta{Labels: map[string]string{v1.LabelName: "other", v1.LabelManagedBy: v1.ManagedByValue}}, false},
		{"not managed by us", metav1.ObjectMeta{Labels: map[string]string{v1.LabelName: "qwen"}}, false},
		{"controlled by someone else", metav1.ObjectMeta{Labels: ours, OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "x", UID: "u", Controller: ptr.To(true)}}}, false},
		{"being deleted", metav1.ObjectMeta{Labels: ours, DeletionTimestamp: &now}, false},
	}
	for _, tc := range cases {
		if got := adoptable(ms, &tc.meta); got != tc.want {
			t.Errorf("%s: adoptable %v, want %v", tc.name, got, tc.want)
		}
	}
}
