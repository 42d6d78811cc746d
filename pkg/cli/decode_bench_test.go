package cli

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/scheme"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// servingListJSON is a list of n converged servings as the API server sends it.
func servingListJSON(tb testing.TB, n int) []byte {
	tb.Helper()
	since := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	var items []any
	for i := range n {
		ms := fixtures.Serving(fmt.Sprintf("m%04d", i), "ns").Replicas(2).GroupSize(2).Generation(1).Status(v1.ModelServingStatus{
			ObservedGeneration: 1, Phase: v1.PhaseReady, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2,
			UpdateRevision: "m-abc", CurrentRevision: "m-abc", ReadyGroups: "2/2",
			Conditions: []metav1.Condition{
				{Type: v1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: v1.ReasonGroupsAvailable, Message: "2 of 2 groups ready", LastTransitionTime: since},
				{Type: v1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: v1.ReasonRolloutComplete, Message: "2 of 2 groups updated, 2 of 2 ready", LastTransitionTime: since},
				{Type: v1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: "AsExpected", Message: "no group is failing", LastTransitionTime: since},
			},
			Groups: []v1.GroupStatus{
				{Index: 0, Revision: "m-abc", Ready: true, ReadyPods: 2, Size: 2},
				{Index: 1, Revision: "m-abc", Ready: true, ReadyPods: 2, Size: 2},
			},
		}).Obj()
		ms.SetGroupVersionKind(v1.GroupVersion.WithKind("ModelServing"))
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ms)
		if err != nil {
			tb.Fatal(err)
		}
		items = append(items, u)
	}
	raw, err := json.Marshal(map[string]any{"apiVersion": v1.GroupVersion.String(), "kind": "ModelServingList",
		"metadata": map[string]any{"resourceVersion": "1"}, "items": items})
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// BenchmarkDecodeServingList is what listServings does with a list of 1000 servings once it has
// the bytes: typed, as the client decodes a typed list (its fast path), and unstructured, then
// each serving on its own (its path when a serving does not fit the Go type).
func BenchmarkDecodeServingList(b *testing.B) {
	raw := servingListJSON(b, 1000)
	b.Run("typed", func(b *testing.B) {
		decoder := serializer.NewCodecFactory(scheme.New()).UniversalDeserializer()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			l := &v1.ModelServingList{}
			if _, _, err := decoder.Decode(raw, nil, l); err != nil {
				b.Fatal(err)
			}
			for i := range l.Items {
				if err := v1.CheckServing(&l.Items[i]); err != nil {
					b.Fatal(err)
				}
			}
			if len(l.Items) != 1000 {
				b.Fatalf("%d servings decoded", len(l.Items))
			}
		}
	})
	b.Run("unstructured", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			l := newServingList()
			if err := l.UnmarshalJSON(raw); err != nil {
				b.Fatal(err)
			}
			for i := range l.Items {
				if it := decodeServing(&l.Items[i]); it.Err != nil {
					b.Fatal(it.Err)
				}
			}
		}
	})
}
