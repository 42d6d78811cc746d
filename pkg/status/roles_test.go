package status_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// pdInput is the summary's input for a 2:6 serving whose groups run rev, prefill groups >=
// pNew and decode groups >= dNew on update; mutate changes the pods before they are split by role.
func pdInput(ms *v1.ModelServing, rev, update string, pNew, dNew int, mutate func([]corev1.Pod)) status.Input {
	var pods []corev1.Pod
	for _, r := range []struct {
		name    v1.RoleName
		n, from int
	}{{v1.RolePrefill, 2, pNew}, {v1.RoleDecode, 6, dNew}} {
		for g := range r.n {
			gr := rev
			if g >= r.from {
				gr = update
			}
			pods = append(pods, fixtures.RoleGroup(ms.Name, r.name, g, 2, gr)...)
		}
	}
	if mutate != nil {
		mutate(pods)
	}
	in := status.Input{Serving: ms, UpdateRevision: update, TemplateRevision: update, Now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	for _, role := range v1.RoleNames() {
		lws := &lwsv1.LeaderWorkerSet{}
		lws.Generation, lws.Status.ObservedGeneration = 1, 1
		ri := status.RoleInput{Name: role, LWS: lws}
		for _, p := range pods {
			if p.Labels[naming.LabelRole] == string(role) {
				ri.Pods = append(ri.Pods, p)
			}
		}
		in.Roles = append(in.Roles, ri)
	}
	return in
}

func TestSummarizeRoles(t *testing.T) {
	ms := fixtures.Serving("qwen", "ns").Roles(2, 6, 2).Obj()
	ms.Status.UpdateRevision, ms.Status.CurrentRevision = "r1", "r1"
	cases := []struct {
		name                  string
		in                    status.Input
		available             metav1.ConditionStatus
		progress, degraded    string
		message               string // a fragment of the Progressing or (when degraded) Degraded message
		ready, updated, roles int32
		phase                 v1.Phase
		done                  bool
	}{
		{
			name: "every role ready on the revision: Available, RolloutComplete, Ready",
			in:   pdInput(ms, "r1", "r1", 2, 6, nil), available: metav1.ConditionTrue,
			progress: v1.ReasonRolloutComplete, degraded: v1.ReasonAsExpected, message: "prefill 2 of 2, decode 6 of 6 groups ready",
			ready: 8, updated: 8, phase: v1.PhaseReady, done: true,
		},
		{
			name: "mid-rollout, Progressing carries the planner's step and what it waits for",
			in: func() status.Input {
				in := pdInput(ms, "r1", "r2", 1, 5, nil)
				in.Plan = status.RolePlan{Step: 1, Steps: 6, State: "Waiting", Why: "prefill: 0 of 1 new groups ready"}
				return in
			}(),
			available: metav1.ConditionTrue, progress: v1.ReasonRollingOut, degraded: v1.ReasonAsExpected,
			message: "step 1 of 6: prefill 1 of 2 groups updated, 2 of 2 ready; decode 1 of 6 groups updated, 6 of 6 ready; waiting for prefill: 0 of 1",
			ready:   8, updated: 2, phase: v1.PhaseProgressing,
		},
		{
			name: "a role short of ready groups makes the serving unavailable, naming the role",
			in: pdInput(ms, "r1", "r1", 2, 6, func(pods []corev1.Pod) {
				for i := range pods[:4] { // both prefill groups
					pods[i].Status.Conditions[1].Status = corev1.ConditionFalse
				}
			}),
			available: metav1.ConditionFalse, progress: v1.ReasonScaling, degraded: v1.ReasonAsExpected, message: "prefill: 0 of 2 groups ready",
			ready: 6, updated: 8, phase: v1.PhaseProgressing,
		},
		{
			name: "the first failing role's reason is the serving's Degraded, naming the role",
			in: pdInput(ms, "r1", "r1", 2, 6, func(pods []corev1.Pod) {
				pods[len(pods)-1] = fixtures.Pod("qwen-decode", 5, 1, "r1").Label(v1.LabelName, "qwen").Label(naming.LabelRole, "decode").
					Unschedulable("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.").Obj()
			}),
			available: metav1.ConditionTrue, progress: v1.ReasonScaling, degraded: v1.ReasonInsufficientGPU, message: "decode: group 5 worker",
			ready: 7, updated: 8, phase: v1.PhaseDegraded,
		},
		{
			name: "a canary of one group per role held by the planner: CanaryHeld, nothing left to wait for",
			in: func() status.Input {
				c := ms.DeepCopy()
				c.Spec.Roles[0].Rollout = &v1.RoleRolloutSpec{Partition: ptr.To[int32](1)}
				c.Spec.Roles[1].Rollout = &v1.RoleRolloutSpec{Partition: ptr.To[int32](5)}
				in := pdInput(c, "r1", "r2", 1, 5, nil)
				in.Plan = status.RolePlan{Step: 1, Steps: 6, State: "CanaryHeld", Why: "canary: prefill 1 of 2, decode 1 of 6 groups on the new revision; promote to go on"}
				return in
			}(),
			available: metav1.ConditionTrue, progress: v1.ReasonCanaryHeld, degraded: v1.ReasonAsExpected, message: "canary: prefill 1 of 2, decode 1 of 6",
			ready: 8, updated: 2, phase: v1.PhaseProgressing, done: true,
		},
		{
			name: "paused by the planner: RolloutPaused",
			in: func() status.Input {
				p := ms.DeepCopy()
				p.Spec.Rollout.Paused = true
				in := pdInput(p, "r1", "r2", 2, 6, nil)
				in.Plan = status.RolePlan{State: "Paused", Why: "rollout paused"}
				return in
			}(),
			available: metav1.ConditionTrue, progress: v1.ReasonRolloutPaused, degraded: v1.ReasonAsExpected, message: "rollout paused",
			ready: 8, updated: 0, phase: v1.PhaseProgressing,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := status.Summarize(tc.in)
			if s.Available.Status != tc.available || s.Progress.Reason != tc.progress || s.Degraded.Reason != tc.degraded {
				t.Errorf("conditions: Available %s (%s), Progressing %s (%s), Degraded %s (%s); want %s, %s, %s",
					s.Available.Status, s.Available.Message, s.Progress.Reason, s.Progress.Message, s.Degraded.Reason, s.Degraded.Message,
					tc.available, tc.progress, tc.degraded)
			}
			msg := s.Progress.Message + " | " + s.Available.Message + " | " + s.Degraded.Message
			if !strings.Contains(msg, tc.message) {
				t.Errorf("messages %q, want %q in one", msg, tc.message)
			}
			if s.Done != tc.done || (s.Done && !s.DeadlineAt.IsZero()) {
				t.Errorf("done %v (deadline %v), want %v", s.Done, s.DeadlineAt, tc.done)
			}
			if s.Ready != tc.ready || s.Updated != tc.updated || s.Desired != 8 || len(s.Roles) != 2 || s.Phase != tc.phase {
				t.Errorf("ready %d updated %d desired %d roles %d phase %s; want %d, %d, 8, 2, %s", s.Ready, s.Updated, s.Desired, len(s.Roles), s.Phase, tc.ready, tc.updated, tc.phase)
			}
		})
	}
}

// A new group that became ready while the rolling update took the next old group down leaves
// every count where it was (an operator away in between sees both at once): the stored groups
// show the progress, and the deadline does not pass on it. A role's groups are its own.
func TestAGroupBecomingReadyIsProgressThoughTheCountsStay(t *testing.T) {
	long := &metav1.Time{Time: time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)} // an hour before pdInput's now
	group := func(i int32, rev string, ready bool) v1.GroupStatus {
		g := v1.GroupStatus{Index: i, Revision: rev, Ready: ready, Size: 2}
		if ready {
			g.ReadyPods = 2
		}
		return g
	}
	down := func(pods []corev1.Pod) {
		for i := range pods[:2] { // prefill group 0: taken down for the update
			pods[i].DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 12, 1, 11, 59, 0, 0, time.UTC)}
			pods[i].Status.Conditions[1].Status = corev1.ConditionFalse
		}
	}
	downAndLoading := func(pods []corev1.Pod) {
		down(pods)
		for i := range pods[2:4] { // prefill group 1: new, not ready yet
			pods[2+i].Status.Conditions[1].Status = corev1.ConditionFalse
		}
	}
	for _, tc := range []struct {
		name    string
		prefill v1.RoleStatus // the stored status of the role
		mutate  func([]corev1.Pod)
		want    string
		ready   int32
	}{
		{
			name:    "group 1 of prefill became ready as group 0 went down: progress",
			prefill: v1.RoleStatus{Name: v1.RolePrefill, Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 1, Groups: []v1.GroupStatus{group(0, "r1", true), group(1, "r2", false)}},
			mutate:  down, want: v1.ReasonRollingOut, ready: 7,
		},
		{
			name:    "the same groups as stored: the deadline passed",
			prefill: v1.RoleStatus{Name: v1.RolePrefill, Replicas: 2, ReadyReplicas: 0, UpdatedReplicas: 1, Groups: []v1.GroupStatus{group(0, "r1", false), group(1, "r2", false)}},
			mutate:  downAndLoading, want: v1.ReasonProgressDeadlineExceeded, ready: 6,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := fixtures.Serving("qwen", "ns").Roles(2, 6, 2).Obj()
			var decode []v1.GroupStatus
			for i, r := range []string{"r1", "r1", "r1", "r1", "r1", "r2"} {
				decode = append(decode, group(int32(i), r, true))
			}
			ms.Status = v1.ModelServingStatus{UpdateRevision: "r2", CurrentRevision: "r1", LastProgressTime: long, Roles: []v1.RoleStatus{
				tc.prefill, {Name: v1.RoleDecode, Replicas: 6, ReadyReplicas: 6, UpdatedReplicas: 1, Groups: decode},
			}}
			ms.Spec.Rollout.ProgressDeadline = &metav1.Duration{Duration: 5 * time.Minute}
			sum := status.Summarize(pdInput(ms, "r1", "r2", 1, 5, tc.mutate))
			if sum.Progress.Reason != tc.want {
				t.Errorf("Progressing %s (%s), want %s", sum.Progress.Reason, sum.Progress.Message, tc.want)
			}
			if sum.Ready != tc.ready || sum.Updated != 2 {
				t.Errorf("ready %d, updated %d: want the stored totals, %d and 2", sum.Ready, sum.Updated, tc.ready)
			}
		})
	}
}
