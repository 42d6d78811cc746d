package tui

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// lwsOf is the serving's LeaderWorkerSet with its template on revision rev, caught up.
func lwsOf(ms *v1.ModelServing, rev string) *lwsv1.LeaderWorkerSet {
	l := &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Name: ms.Name, Namespace: ms.Namespace, Generation: 3,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1.GroupVersion.String(), Kind: "ModelServing", Name: ms.Name, UID: ms.UID, Controller: ptr.To(true)}}}}
	l.Spec.LeaderWorkerTemplate.WorkerTemplate.Labels = map[string]string{v1.LabelRevision: rev}
	l.Status.ObservedGeneration = 3
	return l
}

// The live view and the plain printer decide from the same input the operator does
// (status.InputOf): a paused rollout is paused, and a finished one is done, in every caller.
func TestTheViewDecidesAsTheOperatorDoes(t *testing.T) {
	paused := created(serving(2, 1).Paused().Obj())
	paused.UID = types.UID("uid-demo")
	paused.Status.UpdateRevision = revNew
	done := created(serving(2, 1).Obj())
	done.UID = types.UID("uid-demo")
	done.Status.UpdateRevision, done.Status.CurrentRevision = revNew, revNew
	cases := []struct {
		name   string
		snap   Snapshot
		reason string
		done   bool
	}{
		{"paused: the LWS still carries the old revision", Snapshot{Synced: true, Serving: paused, LWS: lwsOf(paused, revOld),
			Pods: pods(fixtures.Pod("demo", 0, 0, revOld).Obj(), fixtures.Pod("demo", 1, 0, revOld).Obj())}, v1.ReasonRolloutPaused, false},
		{"done: every group ready on the new revision and LWS caught up", Snapshot{Synced: true, Serving: done, LWS: lwsOf(done, revNew),
			Pods: pods(fixtures.Pod("demo", 0, 0, revNew).Obj(), fixtures.Pod("demo", 1, 0, revNew).Obj())}, v1.ReasonRolloutComplete, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			operator := status.Summarize(status.InputOf(status.Observed{Serving: tc.snap.Serving, LWS: tc.snap.LWS, Pods: tc.snap.Pods}, now))
			if operator.Progress.Reason != tc.reason || operator.Done != tc.done {
				t.Fatalf("the operator's summary: %s done=%v, want %s done=%v", operator.Progress.Reason, operator.Done, tc.reason, tc.done)
			}
			m := feed(t, newTestModel(t, "demo", 100, 30, nil), tc.snap)
			if got := m.sv.sum; got.Progress.Reason != tc.reason || got.Done != tc.done {
				t.Errorf("the live view's summary: %s done=%v, want %s done=%v", got.Progress.Reason, got.Done, tc.reason, tc.done)
			}
		})
	}
}
