package status_test

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

func condition(t, s, reason, msg string, gen int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(s), Reason: reason, Message: msg, ObservedGeneration: gen}
}

func TestRolloutStatusReadsTheStoredStatusLikeKubectl(t *testing.T) {
	complete := condition(v1.ConditionProgressing, "True", v1.ReasonRolloutComplete, "2 of 2 groups ready on revision qwen-r2", 3)
	healthy := condition(v1.ConditionDegraded, "False", v1.ReasonAsExpected, "no group is failing", 3)
	cases := []struct {
		name       string
		generation int64
		st         v1.ModelServingStatus
		partition  int32
		wantMsg    string
		wantDone   bool
		wantReason string // of a *RolloutFailedError
	}{
		{
			name: "complete", generation: 3,
			st:      v1.ModelServingStatus{ObservedGeneration: 3, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, Conditions: []metav1.Condition{complete, healthy}},
			wantMsg: "serving \"qwen\" successfully rolled out: 2 of 2 groups ready on revision qwen-r2\n", wantDone: true,
		},
		{
			name: "a complete condition of an older generation is not trusted", generation: 4,
			st:      v1.ModelServingStatus{ObservedGeneration: 3, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, Conditions: []metav1.Condition{complete}},
			wantMsg: "Waiting for rollout to finish: the operator has not yet observed generation 4 of serving \"qwen\" (it last acted on 3)...\n",
		},
		{
			name: "an invalid spec fails even though its generation is not observed", generation: 4,
			st: v1.ModelServingStatus{ObservedGeneration: 3, Conditions: []metav1.Condition{
				condition(v1.ConditionDegraded, "True", v1.ReasonInvalidSpec, "spec.template: bad", 4)}},
			wantReason: v1.ReasonInvalidSpec,
		},
		{
			name: "an invalid spec of an older generation is history", generation: 4,
			st: v1.ModelServingStatus{ObservedGeneration: 3, Conditions: []metav1.Condition{
				condition(v1.ConditionDegraded, "True", v1.ReasonInvalidSpec, "spec.template: bad", 3)}},
			wantMsg: "Waiting for rollout to finish: the operator has not yet observed generation 4 of serving \"qwen\" (it last acted on 3)...\n",
		},
		{
			name: "deadline exceeded", generation: 3,
			st: v1.ModelServingStatus{ObservedGeneration: 3, Conditions: []metav1.Condition{
				condition(v1.ConditionProgressing, "False", v1.ReasonProgressDeadlineExceeded, "no progress for more than 30m0s: 1 of 2 groups updated, 1 of 2 ready", 3)}},
			wantReason: v1.ReasonProgressDeadlineExceeded,
		},
		{
			name: "canary held is done", generation: 3, partition: 1,
			st: v1.ModelServingStatus{ObservedGeneration: 3, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 1, Conditions: []metav1.Condition{
				condition(v1.ConditionProgressing, "True", v1.ReasonCanaryHeld, "canary: groups 1 and above run revision qwen-r2 (1 of 2 groups)", 3)}},
			wantMsg:  "serving \"qwen\" canary is ready and held at partition 1: canary: groups 1 and above run revision qwen-r2 (1 of 2 groups)\n",
			wantDone: true,
		},
		{
			name: "groups still updating", generation: 3,
			st: v1.ModelServingStatus{ObservedGeneration: 3, Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 1, Conditions: []metav1.Condition{
				condition(v1.ConditionProgressing, "True", v1.ReasonRollingOut, "", 3)}},
			wantMsg: "Waiting for rollout to finish: 1 of 2 groups updated...\n",
		},
		{
			name: "a surge group still to go", generation: 3,
			st: v1.ModelServingStatus{ObservedGeneration: 3, Replicas: 3, ReadyReplicas: 2, UpdatedReplicas: 2, Conditions: []metav1.Condition{
				condition(v1.ConditionProgressing, "True", v1.ReasonRollingOut, "", 3)}},
			wantMsg: "Waiting for rollout to finish: 1 old group(s) pending termination...\n",
		},
		{
			name: "updated but loading, degraded for lack of GPUs", generation: 3,
			st: v1.ModelServingStatus{ObservedGeneration: 3, Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 2, Conditions: []metav1.Condition{
				condition(v1.ConditionProgressing, "True", v1.ReasonRollingOut, "", 3),
				condition(v1.ConditionDegraded, "True", v1.ReasonInsufficientGPU, "group 1 leader cannot be scheduled: Insufficient nvidia.com/gpu", 3)}},
			wantMsg: "Waiting for rollout to finish: 1 of 2 updated groups ready (degraded, InsufficientGPU: group 1 leader cannot be scheduled: Insufficient nvidia.com/gpu)...\n",
		},
		{
			name: "paused", generation: 3,
			st: v1.ModelServingStatus{ObservedGeneration: 3, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 0, Conditions: []metav1.Condition{
				condition(v1.ConditionProgressing, "Unknown", v1.ReasonRolloutPaused, "", 3)}},
			wantMsg: "Waiting for rollout to finish: rollout is paused (resume with kubectl llm rollout resume qwen)...\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ms := fixtures.Serving("qwen", "default").Replicas(2).Partition(tc.partition).Generation(tc.generation).Status(tc.st).Obj()
			msg, done, err := status.RolloutStatus(ms)
			if tc.wantReason != "" {
				var failed *status.RolloutFailedError
				if !errors.As(err, &failed) || failed.Reason != tc.wantReason {
					t.Fatalf("err = %v, want a RolloutFailedError with reason %s", err, tc.wantReason)
				}
				if done {
					t.Error("a failed rollout is not done")
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if msg != tc.wantMsg || done != tc.wantDone {
				t.Errorf("got (%q, %v), want (%q, %v)", msg, done, tc.wantMsg, tc.wantDone)
			}
		})
	}
}

// With roles, spec.replicas stays 1: rollout status counts every role's groups, and says the
// planner's step from status.plan.
func TestRolloutStatusOfRolesCountsEveryRolesGroups(t *testing.T) {
	ms := fixtures.Serving("pd", "default").Roles(2, 6, 2).Generation(3).Obj()
	ms.Status = v1.ModelServingStatus{ObservedGeneration: 3, Replicas: 8, ReadyReplicas: 7, UpdatedReplicas: 3, UpdateRevision: "pd-r2",
		Conditions: []metav1.Condition{condition(v1.ConditionProgressing, "True", v1.ReasonRollingOut, "", 3)},
		Plan:       &v1.PlanStatus{Revision: "pd-r2", Step: 2, Steps: 6, State: v1.PlanWaiting}}
	msg, done, err := status.RolloutStatus(ms)
	if want := "Waiting for rollout to finish: 3 of 8 groups updated (step 2 of 6)...\n"; err != nil || done || msg != want {
		t.Errorf("got (%q, %v, %v), want %q", msg, done, err, want)
	}
	ms.Status.Plan = nil // an operator that reports no plan
	ms.Status.UpdatedReplicas, ms.Status.ReadyReplicas = 8, 7
	if msg, _, _ := status.RolloutStatus(ms); msg != "Waiting for rollout to finish: 7 of 8 updated groups ready...\n" {
		t.Errorf("got %q", msg)
	}
}

// A held canary of a serving with roles names each role's partition: spec.rollout.partition
// stays 0 with roles, and a partition is a group index of one role.
func TestRolloutStatusOfRolesNamesEachRolesPartition(t *testing.T) {
	ms := fixtures.Serving("pd", "default").Roles(2, 6, 2).Generation(3).Obj()
	for i, p := range []int32{1, 5} {
		ms.Spec.Roles[i].Rollout = &v1.RoleRolloutSpec{Partition: &p}
	}
	ms.Status = v1.ModelServingStatus{ObservedGeneration: 3, Replicas: 8, ReadyReplicas: 8, UpdatedReplicas: 2, UpdateRevision: "pd-r2",
		Conditions: []metav1.Condition{condition(v1.ConditionProgressing, "True", v1.ReasonCanaryHeld, "canary: 1 of 2 prefill, 1 of 6 decode groups on pd-r2", 3)}}
	msg, done, err := status.RolloutStatus(ms)
	want := "serving \"pd\" canary is ready and held at prefill partition 1, decode partition 5: canary: 1 of 2 prefill, 1 of 6 decode groups on pd-r2\n"
	if err != nil || !done || msg != want {
		t.Errorf("got (%q, %v, %v), want %q", msg, done, err, want)
	}
}

// DesiredGroups is what the summary counts as desired, for views of a serving the operator has
// not reported yet: spec.replicas, or every role's groups (an unset count is the CRD's default 1).
func TestDesiredGroupsIsTheSummarysDesired(t *testing.T) {
	unsetPrefill := fixtures.Serving("pd", "default").Roles(2, 6, 2).Obj()
	unsetPrefill.Spec.Roles[0].Replicas = nil
	unset := fixtures.Serving("qwen", "default").Obj()
	unset.Spec.Replicas = nil
	for _, tc := range []struct {
		name string
		ms   *v1.ModelServing
		want int32
	}{
		{"spec.replicas", fixtures.Serving("qwen", "default").Replicas(3).Obj(), 3},
		{"spec.replicas unset", unset, 1},
		{"roles: every role's groups, not spec.replicas", fixtures.Serving("pd", "default").Roles(2, 6, 2).Obj(), 8},
		{"roles, one count unset", unsetPrefill, 7},
	} {
		got := status.DesiredGroups(tc.ms.Spec)
		sum := status.Summarize(status.InputOf(status.Observed{Serving: tc.ms}, now))
		if got != tc.want || sum.Desired != tc.want {
			t.Errorf("%s: DesiredGroups %d, the summary's Desired %d; want %d", tc.name, got, sum.Desired, tc.want)
		}
	}
}
