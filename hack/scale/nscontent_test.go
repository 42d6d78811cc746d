package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What a namespace being deleted still holds of a kind: how many objects, how many of them being
// deleted, how many carrying finalizers (a serving whose finalizer is still on holds the
// namespace controller 8 s a pass).
func TestKindContentCountsTheDeletedAndThoseWithFinalizers(t *testing.T) {
	now := metav1.Now()
	items := []metav1.PartialObjectMetadata{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", DeletionTimestamp: &now, Finalizers: []string{"serving.kubectl-llm.dev/children"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c", Finalizers: []string{"serving.kubectl-llm.dev/children"}}},
	}
	if got, want := kindContent("ModelServings", items), "ModelServings 3 (deleting 1, with finalizers 2)"; got != want {
		t.Errorf("kindContent = %q, want %q", got, want)
	}
	if got := kindContent("pods", nil); got != "" {
		t.Errorf("kindContent of none = %q, want it left out", got)
	}
}
