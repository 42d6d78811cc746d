package operator

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

func pacedStatus() v1.ModelServingStatus {
	since := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	return v1.ModelServingStatus{
		ObservedGeneration: 3, Phase: v1.PhaseProgressing, Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 2,
		UpdateRevision: "qwen-abc", CurrentRevision: "qwen-abc",
		Conditions: []metav1.Condition{{Type: v1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: v1.ReasonGroupsAvailable,
			Message: "1 of 2 groups ready"}},
		Groups: []v1.GroupStatus{
			{Index: 0, Revision: "qwen-abc", Ready: true, ReadyPods: 2, Size: 2},
			{Index: 1, Revision: "qwen-abc", ReadyPods: 0, Size: 2, Reason: "worker 1: ContainerCreating", Since: &since},
		},
		Roles: []v1.RoleStatus{{Name: v1.RoleDecode, Replicas: 1, Groups: []v1.GroupStatus{{Index: 0, Size: 2, Reason: "leader: Pending"}}}},
		Plan:  &v1.PlanStatus{Step: 1, Steps: 2, Message: "waiting for decode"},
	}
}

// What a pod's every transition changes (a group's reason, since, ready pods, a message) is
// detail; what a user or script acts on (counts, readiness, phase, conditions, revisions, the
// plan's step) is not.
func TestStatusDetailOnly(t *testing.T) {
	later := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC))
	cases := []struct {
		name   string
		change func(*v1.ModelServingStatus)
		detail bool
	}{
		{"nothing", func(*v1.ModelServingStatus) {}, true},
		{"a group's reason and since", func(s *v1.ModelServingStatus) {
			s.Groups[1].Reason, s.Groups[1].Since = "worker 1: loading weights", &later
		}, true},
		{"a group's ready pods", func(s *v1.ModelServingStatus) { s.Groups[1].ReadyPods = 1 }, true},
		{"a role's group reason", func(s *v1.ModelServingStatus) { s.Roles[0].Groups[0].Reason = "leader: ContainerCreating" }, true},
		{"a condition's message", func(s *v1.ModelServingStatus) { s.Conditions[0].Message = "group 1 is starting" }, true},
		{"the plan's message", func(s *v1.ModelServingStatus) { s.Plan.Message = "waiting for prefill" }, true},
		{"a group became ready", func(s *v1.ModelServingStatus) { s.Groups[1].Ready = true }, false},
		{"the ready count", func(s *v1.ModelServingStatus) { s.ReadyReplicas = 2 }, false},
		{"the phase", func(s *v1.ModelServingStatus) { s.Phase = v1.PhaseReady }, false},
		{"a condition's status", func(s *v1.ModelServingStatus) { s.Conditions[0].Status = metav1.ConditionFalse }, false},
		{"a condition's reason", func(s *v1.ModelServingStatus) { s.Conditions[0].Reason = v1.ReasonGroupsUnavailable }, false},
		{"observedGeneration", func(s *v1.ModelServingStatus) { s.ObservedGeneration = 4 }, false},
		{"the update revision", func(s *v1.ModelServingStatus) { s.UpdateRevision = "qwen-def" }, false},
		{"a group's revision", func(s *v1.ModelServingStatus) { s.Groups[0].Revision = "qwen-def" }, false},
		{"a group gone", func(s *v1.ModelServingStatus) { s.Groups = s.Groups[:1] }, false},
		{"a role's ready count", func(s *v1.ModelServingStatus) { s.Roles[0].ReadyReplicas = 1 }, false},
		{"the plan's step", func(s *v1.ModelServingStatus) { s.Plan.Step = 2 }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev, next := pacedStatus(), pacedStatus()
			c.change(&next)
			if got := StatusDetailOnly(prev, next); got != c.detail {
				t.Errorf("StatusDetailOnly = %v, want %v", got, c.detail)
			}
			if StatusDetailOnly(pacedStatus(), pacedStatus()) != true {
				t.Error("the same status is not detail only")
			}
		})
	}
}

// A detail change waits for the rest of the interval since this process last wrote the serving's
// status; a change that is more than detail, or a serving whose status it never wrote, does not.
func TestStatusDetailWait(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "qwen"}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	prev := pacedStatus()
	detail := pacedStatus()
	detail.Groups[1].Reason = "worker 1: loading weights"
	counts := pacedStatus()
	counts.ReadyReplicas = 2

	r := &Reconciler{StatusDetailInterval: time.Second}
	if w := r.statusDetailWait(key, prev, detail, t0); w != 0 {
		t.Errorf("never written by this process: wait %s, want 0", w)
	}
	r.statusWritten.Store(key, t0)
	if w := r.statusDetailWait(key, prev, detail, t0.Add(300*time.Millisecond)); w != 700*time.Millisecond {
		t.Errorf("detail 300 ms after a write: wait %s, want 700ms", w)
	}
	if w := r.statusDetailWait(key, prev, counts, t0.Add(300*time.Millisecond)); w != 0 {
		t.Errorf("a count 300 ms after a write: wait %s, want 0 (written at once)", w)
	}
	if w := r.statusDetailWait(key, prev, detail, t0.Add(time.Second)); w != 0 {
		t.Errorf("detail a whole interval after a write: wait %s, want 0", w)
	}
	other := types.NamespacedName{Namespace: "ns", Name: "other"}
	if w := r.statusDetailWait(other, prev, detail, t0.Add(300*time.Millisecond)); w != 0 {
		t.Errorf("another serving: wait %s, want 0", w)
	}
	if w := (&Reconciler{}).statusDetailWait(key, prev, detail, t0); w != 0 {
		t.Errorf("a new reconciler: wait %s, want 0", w)
	}
	def := &Reconciler{}
	def.statusWritten.Store(key, t0)
	if w := def.statusDetailWait(key, prev, detail, t0.Add(400*time.Millisecond)); w != DefaultStatusDetailInterval-400*time.Millisecond {
		t.Errorf("the default interval: wait %s, want %s", w, DefaultStatusDetailInterval-400*time.Millisecond)
	}
}
