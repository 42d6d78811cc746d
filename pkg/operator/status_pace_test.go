package operator

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
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
		Plan: &v1.PlanStatus{Step: 1, Steps: 2, Message: "waiting for decode",
			Roles: []v1.RolePlanTarget{{Name: v1.RoleDecode, Replicas: 1}}},
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
		{"groups made and updated", func(s *v1.ModelServingStatus) {
			s.Replicas, s.UpdatedReplicas, s.LastProgressTime = 3, 3, &later
		}, true},
		{"a group's revision", func(s *v1.ModelServingStatus) { s.Groups[0].Revision = "qwen-def" }, true},
		{"a role's groups made and updated", func(s *v1.ModelServingStatus) {
			s.Roles[0].Replicas, s.Roles[0].UpdatedReplicas, s.Roles[0].Groups[0].Revision = 2, 2, "qwen-def"
		}, true},
		{"the plan's updated count of a role", func(s *v1.ModelServingStatus) { s.Plan.Roles[0].UpdatedReplicas = 1 }, true},
		{"the plan's target of a role", func(s *v1.ModelServingStatus) { s.Plan.Roles[0].Replicas = 2 }, false},
		{"a group became ready", func(s *v1.ModelServingStatus) { s.Groups[1].Ready = true }, false},
		{"the ready count", func(s *v1.ModelServingStatus) { s.ReadyReplicas = 2 }, false},
		{"the phase", func(s *v1.ModelServingStatus) { s.Phase = v1.PhaseReady }, false},
		{"a condition's status", func(s *v1.ModelServingStatus) { s.Conditions[0].Status = metav1.ConditionFalse }, false},
		{"a condition's reason", func(s *v1.ModelServingStatus) { s.Conditions[0].Reason = v1.ReasonGroupsUnavailable }, false},
		{"observedGeneration", func(s *v1.ModelServingStatus) { s.ObservedGeneration = 4 }, false},
		{"the update revision", func(s *v1.ModelServingStatus) { s.UpdateRevision = "qwen-def" }, false},
		{"a group gone", func(s *v1.ModelServingStatus) { s.Groups = s.Groups[:1] }, false},
		{"a role's ready count", func(s *v1.ModelServingStatus) { s.Roles[0].ReadyReplicas = 1 }, false},
		{"the plan's step", func(s *v1.ModelServingStatus) { s.Plan.Step = 2 }, false},
		{"the plan's state", func(s *v1.ModelServingStatus) { s.Plan.State = v1.PlanCanaryHeld }, false},
		{"a role's readyGroups", func(s *v1.ModelServingStatus) { s.Roles[0].ReadyGroups = "1/1" }, false},
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

// A detail change waits the interval from when a pass first held it back, and at least the
// interval since this process last wrote the serving's status; a change that is more than detail,
// or of a serving whose status it never wrote, does not wait.
func TestStatusDetailWait(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "qwen"}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	prev := pacedStatus()
	detail := pacedStatus()
	detail.Groups[1].Reason = "worker 1: loading weights"
	counts := pacedStatus()
	counts.ReadyReplicas = 2

	r := &Reconciler{StatusDetailInterval: time.Second}
	if w := r.statusDetailWait(key, prev, detail, t0); w != 0 {
		t.Errorf("never written by this process: wait %s, want 0", w)
	}
	r.statusWritten.Store(key, ownStatus{at: t0})
	// Held first 300 ms after a write: due one interval after that.
	if w := r.statusDetailWait(key, prev, detail, at(300*time.Millisecond)); w != time.Second {
		t.Errorf("detail first held 300 ms after a write: wait %s, want 1s", w)
	}
	if w := r.statusDetailWait(key, prev, detail, at(800*time.Millisecond)); w != 500*time.Millisecond {
		t.Errorf("the same detail half a second later: wait %s, want 500ms (held since 300 ms)", w)
	}
	if w := r.statusDetailWait(key, prev, counts, at(800*time.Millisecond)); w != 0 {
		t.Errorf("a count while detail waits: wait %s, want 0 (written at once)", w)
	}
	if w := r.statusDetailWait(key, prev, detail, at(1300*time.Millisecond)); w != 0 {
		t.Errorf("detail held a whole interval: wait %s, want 0", w)
	}

	// Long after the last write, detail still waits an interval from when it is first held:
	// a group that turns ready within it is written once, with its detail.
	quiet := &Reconciler{StatusDetailInterval: time.Second}
	quiet.statusWritten.Store(key, ownStatus{at: t0})
	if w := quiet.statusDetailWait(key, prev, detail, at(time.Minute)); w != time.Second {
		t.Errorf("detail a minute after the last write: wait %s, want 1s", w)
	}
	quiet.detailHeld.Delete(key) // what a write or a pass with nothing to write does
	if w := quiet.statusDetailWait(key, prev, detail, at(2*time.Minute)); w != time.Second {
		t.Errorf("detail held anew after a write: wait %s, want 1s (not the old hold's due time)", w)
	}

	other := types.NamespacedName{Namespace: "ns", Name: "other"}
	if w := r.statusDetailWait(other, prev, detail, at(300*time.Millisecond)); w != 0 {
		t.Errorf("another serving: wait %s, want 0", w)
	}
	if w := (&Reconciler{}).statusDetailWait(key, prev, detail, t0); w != 0 {
		t.Errorf("a new reconciler: wait %s, want 0", w)
	}
	def := &Reconciler{}
	def.statusWritten.Store(key, ownStatus{at: t0})
	if w := def.statusDetailWait(key, prev, detail, at(400*time.Millisecond)); w != DefaultStatusDetailInterval {
		t.Errorf("the default interval: wait %s, want %s", w, DefaultStatusDetailInterval)
	}
}

// A pass that holds back status detail looks again when it may be written, whatever else it
// waits for (a conflicting child's recheck, LeaderWorkerSet missing, a progress deadline), unless
// it looks again sooner; a failed pass is retried with backoff, and its result is not touched.
func TestWithDetailWait(t *testing.T) {
	failed := errors.New("apply failed")
	for _, tc := range []struct {
		name string
		res  ctrl.Result
		err  error
		wait time.Duration
		want time.Duration
	}{
		{"nothing held back", ctrl.Result{RequeueAfter: conflictRecheck}, nil, 0, conflictRecheck},
		{"held back, nothing else to wait for", ctrl.Result{}, nil, 700 * time.Millisecond, 700 * time.Millisecond},
		{"held back, a conflict recheck later", ctrl.Result{RequeueAfter: conflictRecheck}, nil, 700 * time.Millisecond, 700 * time.Millisecond},
		{"held back, LeaderWorkerSet missing", ctrl.Result{RequeueAfter: lwsMissingRecheck}, nil, time.Second, time.Second},
		{"held back, a deadline sooner", ctrl.Result{RequeueAfter: 200 * time.Millisecond}, nil, 700 * time.Millisecond, 200 * time.Millisecond},
		{"held back, the pass failed", ctrl.Result{}, failed, 700 * time.Millisecond, 0},
	} {
		res, err := withDetailWait(tc.res, tc.err, tc.wait)
		if res.RequeueAfter != tc.want || err != tc.err {
			t.Errorf("%s: requeue after %s, error %v; want %s, %v", tc.name, res.RequeueAfter, err, tc.want, tc.err)
		}
	}
}

// A serving whose spec cannot be served ends each pass in a terminal error, which is not
// requeued: a change of detail alone is then written at once, not held back for a pass that
// never comes.
func TestAPassEndingInATerminalErrorWritesItsDetail(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ms := fixtures.Serving("bad", "default").Replicas(1).GroupSize(1).Obj()
	ms.Finalizers = []string{v1.FinalizerChildren}
	ms.Spec.Template = fixtures.RawTemplate(`{"metadata":{"labels":{"serving.kubectl-llm.dev/name":"someone-else"}}}`)
	leader := fixtures.Pod("bad", 0, 0, "bad-r1").Waiting("ContainerCreating", "", 0, 0).Obj()
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithStatusSubresource(&v1.ModelServing{}).
		WithObjects(ms, &leader).Build()
	r := &Reconciler{Client: c, Scheme: testenv.Scheme(), Clock: clocktesting.NewFakeClock(t0), StatusDetailInterval: time.Hour}
	key := types.NamespacedName{Namespace: "default", Name: "bad"}
	reason := func() string {
		t.Helper()
		got := &v1.ModelServing{}
		if err := c.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		if len(got.Status.Groups) != 1 {
			t.Fatalf("status groups %+v, want group 0", got.Status.Groups)
		}
		return got.Status.Groups[0].Reason
	}
	pass := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); !errors.Is(err, reconcile.TerminalError(nil)) {
			t.Fatalf("pass over a spec that cannot be served: error %v, want a terminal one", err)
		}
	}
	pass()
	first := reason()
	prev := &v1.ModelServing{}
	if err := c.Get(ctx, key, prev); err != nil {
		t.Fatal(err)
	}
	leader = fixtures.Pod("bad", 0, 0, "bad-r1").Waiting("ImagePullBackOff", "pull access denied", 0, 0).Obj()
	if err := c.Status().Update(ctx, &leader); err != nil {
		t.Fatal(err)
	}
	pass()
	if got := reason(); got == first || !strings.Contains(got, "ImagePullBackOff") {
		t.Errorf("group 0's reason %q after the leader's change (was %q): want the new one, ImagePullBackOff, written at once", got, first)
	}
	// The change was detail alone: without the terminal error it would have waited.
	now := &v1.ModelServing{}
	if err := c.Get(ctx, key, now); err != nil {
		t.Fatal(err)
	}
	if !StatusDetailOnly(prev.Status, now.Status) {
		t.Errorf("the leader's change was more than detail, so this test proves nothing:\n%+v\n%+v", prev.Status, now.Status)
	}
}

// A serving that is gone (deleted mid rollout, say) leaves nothing behind in the reconciler's
// per-serving memory; another serving's stays.
func TestAServingGoneIsForgotten(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	gone := types.NamespacedName{Namespace: "default", Name: "gone"}
	other := types.NamespacedName{Namespace: "default", Name: "other"}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(testenv.Scheme()).Build(), Scheme: testenv.Scheme(), Clock: clocktesting.NewFakeClock(t0)}
	for _, k := range []types.NamespacedName{gone, other} {
		r.statusWritten.Store(k, ownStatus{at: t0})
		r.rolloutStart.Store(k, t0)
		r.applied.Store(childKey{"LeaderWorkerSet", k}, int64(1))
	}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: gone}); err != nil {
		t.Fatal(err)
	}
	for what, m := range map[string]*sync.Map{"statusWritten": &r.statusWritten, "rolloutStart": &r.rolloutStart} {
		if _, ok := m.Load(gone); ok {
			t.Errorf("%s still holds the serving that is gone", what)
		}
		if _, ok := m.Load(other); !ok {
			t.Errorf("%s lost another serving", what)
		}
	}
	if _, ok := r.applied.Load(childKey{"LeaderWorkerSet", gone}); ok {
		t.Error("applied still holds the LeaderWorkerSet of the serving that is gone")
	}
	if _, ok := r.applied.Load(childKey{"LeaderWorkerSet", other}); !ok {
		t.Error("applied lost another serving's LeaderWorkerSet")
	}
}

// rollingStatus is a rollout of two groups in progress: group 1 on the update revision and ready,
// group 0 still on the old one.
func rollingStatus(reason string) v1.ModelServingStatus {
	return v1.ModelServingStatus{
		ObservedGeneration: 4, Phase: v1.PhaseProgressing, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 1, ReadyGroups: "2/2",
		UpdateRevision: "qwen-new", CurrentRevision: "qwen-old",
		Conditions: []metav1.Condition{
			{Type: v1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: v1.ReasonGroupsAvailable, Message: "2 of 2 groups ready"},
			{Type: v1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: reason, Message: "1 of 2 groups updated, 2 of 2 ready"},
		},
		Groups: []v1.GroupStatus{
			{Index: 0, Revision: "qwen-old", Ready: true, ReadyPods: 2, Size: 2},
			{Index: 1, Revision: "qwen-new", Ready: true, ReadyPods: 2, Size: 2},
		},
		Roles: []v1.RoleStatus{{Name: v1.RoleDecode, Replicas: 1, ReadyReplicas: 1, ReadyGroups: "1/1",
			Groups: []v1.GroupStatus{{Index: 0, Size: 2, Ready: true, ReadyPods: 2}}}},
	}
}

// While one rollout or restart goes on, the groups it replaces going not ready and ready again
// are its progress (detail); its start and end, and what a script acts on, are not.
func TestARolloutsGroupsGoingNotReadyAndReadyAreItsProgress(t *testing.T) {
	groupDown := func(s *v1.ModelServingStatus) {
		s.ReadyReplicas, s.ReadyGroups = 1, "1/2"
		s.Groups[0].Ready, s.Groups[0].ReadyPods, s.Groups[0].Reason = false, 1, "leader: Terminating"
		for i := range s.Conditions {
			s.Conditions[i].Message = "1 of 2 groups ready"
		}
	}
	cases := []struct {
		name         string
		prev, next   string // the Progressing reason of each
		change       func(*v1.ModelServingStatus)
		detail, same bool
	}{
		{"rolling out: the next group goes not ready", v1.ReasonRollingOut, v1.ReasonRollingOut, groupDown, true, true},
		{"rolling out: it is made on the update revision", v1.ReasonRollingOut, v1.ReasonRollingOut, func(s *v1.ModelServingStatus) {
			groupDown(s)
			s.Groups[0].Revision, s.UpdatedReplicas = "qwen-new", 2
		}, true, true},
		{"rolling out: a role's group goes not ready", v1.ReasonRollingOut, v1.ReasonRollingOut, func(s *v1.ModelServingStatus) {
			s.Roles[0].ReadyReplicas, s.Roles[0].ReadyGroups, s.Roles[0].Groups[0].Ready = 0, "0/1", false
		}, true, true},
		{"restarting: the next group goes not ready", v1.ReasonRestarting, v1.ReasonRestarting, groupDown, true, true},
		{"rolling out: Available turns False", v1.ReasonRollingOut, v1.ReasonRollingOut, func(s *v1.ModelServingStatus) {
			groupDown(s)
			s.Conditions[0].Status, s.Conditions[0].Reason = metav1.ConditionFalse, v1.ReasonGroupsUnavailable
		}, false, true},
		{"rolling out: the phase changes", v1.ReasonRollingOut, v1.ReasonRollingOut, func(s *v1.ModelServingStatus) {
			groupDown(s)
			s.Phase = v1.PhaseDegraded
		}, false, true},
		{"the rollout ends", v1.ReasonRollingOut, v1.ReasonRolloutComplete, func(s *v1.ModelServingStatus) {
			s.Groups[0].Revision, s.UpdatedReplicas, s.CurrentRevision = "qwen-new", 2, "qwen-new"
		}, false, false},
		{"another rollout begins", v1.ReasonRollingOut, v1.ReasonRollingOut, func(s *v1.ModelServingStatus) {
			groupDown(s)
			s.ObservedGeneration, s.UpdateRevision = 5, "qwen-newer"
		}, false, false},
		{"a restart begins mid rollout", v1.ReasonRollingOut, v1.ReasonRestarting, groupDown, false, false},
		{"no rollout: a group goes not ready", v1.ReasonRolloutComplete, v1.ReasonRolloutComplete, groupDown, false, false},
		{"scaling: a group goes not ready", v1.ReasonScaling, v1.ReasonScaling, groupDown, false, false},
		{"a canary held: a group goes not ready", v1.ReasonCanaryHeld, v1.ReasonCanaryHeld, groupDown, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev, next := rollingStatus(c.prev), rollingStatus(c.next)
			c.change(&next)
			if got := sameRollout(prev, next); got != c.same {
				t.Errorf("sameRollout = %v, want %v", got, c.same)
			}
			if got := StatusDetailOnly(prev, next); got != c.detail {
				t.Errorf("StatusDetailOnly = %v, want %v", got, c.detail)
			}
		})
	}
	// The same changes of readiness with no Progressing condition at all (a status of before).
	prev, next := rollingStatus(v1.ReasonRollingOut), rollingStatus(v1.ReasonRollingOut)
	prev.Conditions, next.Conditions = prev.Conditions[:1], next.Conditions[:1]
	groupDown(&next)
	if StatusDetailOnly(prev, next) {
		t.Error("a group going not ready with no Progressing condition is detail: want it written at once")
	}
}
