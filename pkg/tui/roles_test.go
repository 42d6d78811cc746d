package tui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/roleplan"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// rolesSnapshot is a 2:6 serving at step 2 of 6: prefill 1 of 2 groups on r2, decode 2 of 6 on r2
// with the second still loading.
func rolesSnapshot() Snapshot {
	ms := fixtures.Serving("pd", "default").Roles(2, 6, 2).Obj()
	ms.Status.CurrentRevision, ms.Status.UpdateRevision = "pd-r1", "pd-r2"
	ms.Status.ObservedGeneration = ms.Generation // the operator planned this spec
	var pods []corev1.Pod
	for g, rev := range []string{"pd-r1", "pd-r2"} {
		pods = append(pods, fixtures.RoleGroup("pd", v1.RolePrefill, g, 2, rev)...)
	}
	for g, rev := range []string{"pd-r1", "pd-r1", "pd-r1", "pd-r1", "pd-r2", "pd-r2"} {
		group := fixtures.RoleGroup("pd", v1.RoleDecode, g, 2, rev)
		if g == 5 {
			group[0].Status.Conditions[1].Status = corev1.ConditionFalse
		}
		pods = append(pods, group...)
	}
	in, err := status.PlanInput(status.Observed{Serving: ms, Roles: status.RoleInputs(ms, pods, nil)}, ms.Status.UpdateRevision, now)
	if err != nil {
		panic(err)
	}
	// What the operator reports for these groups.
	ms.Status.Plan = status.PlanStatus(roleplan.Next(in), ms.Status.UpdateRevision)
	return Snapshot{Synced: true, Serving: ms, Pods: pods}
}

func TestStepLineAndCountsFromWhatTheViewSees(t *testing.T) {
	s := rolesSnapshot()
	sum := status.Summarize(status.InputOf(status.Observed{Serving: s.Serving, Pods: s.Pods}, now))
	if got, want := StepLine(s.Serving.Status.Plan), "step 2/6: waiting for decode: 1 of 2 new groups ready"; got != want {
		t.Errorf("step line %q, want %q", got, want)
	}
	counts := RoleCountsOf(s.Serving, sum)
	if len(counts) != 2 || counts[0] != (RoleCounts{Name: v1.RolePrefill, Desired: 2, New: 1, NewReady: 1, Old: 1, OldReady: 1, Size: 2}) ||
		counts[1].New != 2 || counts[1].NewReady != 1 || counts[1].Old != 4 {
		t.Errorf("counts %+v", counts)
	}
	if skew := RoleSkew(sum); len(skew) != 0 {
		t.Errorf("both roles have ready groups on each revision, yet: %v", skew)
	}
	// Only the loading decode group on r2: prefill is ready there alone.
	s.Pods = append(s.Pods[:2:2], append(fixtures.RoleGroup("pd", v1.RolePrefill, 1, 2, "pd-r2"), s.Pods[4:12]...)...)
	s.Pods = append(s.Pods, fixtures.RoleGroup("pd", v1.RoleDecode, 5, 2, "pd-r2")...)
	s.Pods[len(s.Pods)-2].Status.Conditions[1].Status = corev1.ConditionFalse
	sum = status.Summarize(status.InputOf(status.Observed{Serving: s.Serving, Pods: s.Pods}, now))
	if skew := RoleSkew(sum); len(skew) != 1 || !strings.Contains(skew[0], "revision pd-r2 has 1 ready prefill group(s) but no ready decode group") {
		t.Errorf("skew %v", skew)
	}
}

func TestPlainLinesOfRoles(t *testing.T) {
	var out bytes.Buffer
	p := newPlainPrinter(Config{Out: &out, Clock: func() time.Time { return now }, Namespace: "default", Name: "pd"}.withDefaults())
	if _, err := p.print(rolesSnapshot()); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"role prefill: 2 desired; new 1 (1 ready), old 1 (1 ready)\n",
		"role decode: 6 desired; new 2 (1 ready), old 4 (4 ready)\n",
		"serving pd: step 2/6: waiting for decode: 1 of 2 new groups ready\n",
		"prefill group 1 leader: Ready\n", "decode group 5 leader: Loading",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

// TestRolesScreen shows the roles as sections of the live view: each role's new and old groups,
// the planner's step, and every group named by its role; restarting a role's group from the
// view points to the command that can.
func TestRolesScreen(t *testing.T) {
	m := feed(t, newTestModel(t, "pd", 120, 30, nil), rolesSnapshot())
	out := display(t, m)
	mustContain(t, out, "roles prefill new 1/2 (1 ready) old 1 · decode new 2/6 (1 ready) old 4",
		"step 2/6: waiting for decode: 1 of 2 new groups ready", "prefill 0", "prefill 1", "decode 5")
	m, _ = press(t, m, "r")
	if !strings.Contains(display(t, m), "kubectl llm restart pd --role prefill --group 0") {
		t.Errorf("restarting a role's group from the view does not say how:\n%s", display(t, m))
	}
}

// A serving whose operator reports no status.plan (an older one) shows its roles without a step
// line: the view does not plan again.
func TestRolesWithoutAPlanInTheStatus(t *testing.T) {
	snap := rolesSnapshot()
	snap.Serving.Status.Plan = nil
	if got := StepLine(nil); got != "" {
		t.Errorf("step line of no plan %q", got)
	}
	m := feed(t, newTestModel(t, "pd", 120, 30, nil), snap)
	out := display(t, m)
	mustContain(t, out, "roles prefill new 1/2 (1 ready) old 1 · decode new 2/6 (1 ready) old 4")
	if strings.Contains(out, "step ") {
		t.Errorf("a step line without a plan in the status:\n%s", out)
	}
	var buf bytes.Buffer
	p := newPlainPrinter(Config{Out: &buf, Clock: func() time.Time { return now }, Namespace: "default", Name: "pd"}.withDefaults())
	if _, err := p.print(snap); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "step ") {
		t.Errorf("plain lines with a step line without a plan in the status:\n%s", buf.String())
	}
}

// StepLine follows status.plan's state, whatever the groups say.
func TestStepLineOfEachState(t *testing.T) {
	for _, tc := range []struct {
		plan v1.PlanStatus
		want string
	}{
		{v1.PlanStatus{State: v1.PlanComplete}, "no rollout under way"},
		{v1.PlanStatus{State: v1.PlanProgressing}, "scaling every role to its groups (no rollout under way)"},
		{v1.PlanStatus{Step: 3, Steps: 6, State: v1.PlanProgressing, Roles: []v1.RolePlanTarget{{Name: v1.RolePrefill, Replicas: 2, UpdatedReplicas: 1}, {Name: v1.RoleDecode, Replicas: 6, UpdatedReplicas: 3}}},
			"step 3/6: moving to prefill 1 of 2, decode 3 of 6 group(s) on the new revision"},
		{v1.PlanStatus{Step: 1, Steps: 6, State: v1.PlanCanaryHeld, Message: "canary: prefill 1 of 2, decode 1 of 6 groups on the new revision; promote to go on"},
			"step 1/6: canary: prefill 1 of 2, decode 1 of 6 groups on the new revision; promote to go on"},
		{v1.PlanStatus{Step: 6, Steps: 6, State: v1.PlanComplete}, "step 6/6: complete"},
	} {
		if got := StepLine(&tc.plan); got != tc.want {
			t.Errorf("StepLine(%+v) = %q, want %q", tc.plan, got, tc.want)
		}
	}
}

// TestCanaryActionsOfRoles: P and A see the roles' partitions, not spec.rollout.partition
// (which a serving with roles leaves at 0).
func TestCanaryActionsOfRoles(t *testing.T) {
	snap := rolesSnapshot()
	fake := &fakeActions{}
	m := feed(t, newTestModel(t, "pd", 120, 40, fake), snap)
	m, _ = press(t, m, "P")
	mustContain(t, display(t, m), "no canary to promote: every role's partition is 0")

	snap = rolesSnapshot()
	snap.Serving.Spec.Roles[0].Rollout = &v1.RoleRolloutSpec{Partition: ptr.To[int32](1)}
	snap.Serving.Spec.Roles[1].Rollout = &v1.RoleRolloutSpec{Partition: ptr.To[int32](5)}
	m = feed(t, newTestModel(t, "pd", 120, 40, fake), snap)
	m, prompt := confirm(t, m, "y", "P")
	mustContain(t, prompt, "Promote the canary of pd (partitions prefill 1, decode 5 → 0: every group of every role moves to")
	m, prompt = confirm(t, m, "y", "A")
	mustContain(t, prompt, "Abort: write revision")
	mustContain(t, prompt, "back to pd and clear every role's partition?")
	if calls := fake.Calls(); len(calls) != 2 {
		t.Errorf("calls %v, want a promote and an abort", calls)
	}
	_ = m
}

// prefillDoneSnapshot is rolesSnapshot at step 4 of 6: every prefill group on r2 and ready, decode
// 4 of 6 there.
func prefillDoneSnapshot() Snapshot {
	s := rolesSnapshot()
	ms := s.Serving
	var pods []corev1.Pod
	for g := range 2 {
		pods = append(pods, fixtures.RoleGroup("pd", v1.RolePrefill, g, 2, "pd-r2")...)
	}
	for g, rev := range []string{"pd-r1", "pd-r1", "pd-r2", "pd-r2", "pd-r2", "pd-r2"} {
		pods = append(pods, fixtures.RoleGroup("pd", v1.RoleDecode, g, 2, rev)...)
	}
	in, err := status.PlanInput(status.Observed{Serving: ms, Roles: status.RoleInputs(ms, pods, nil)}, ms.Status.UpdateRevision, now)
	if err != nil {
		panic(err)
	}
	ms.Status.Plan = status.PlanStatus(roleplan.Next(in), ms.Status.UpdateRevision)
	s.Pods = pods
	return s
}

// When a role's rollout completes while another's goes on, the live view and the plain lines say
// so, as the single-role view says when its rollout completes; a role merely at rest (no rollout
// under way) gets no notice.
func TestARoleWhoseRolloutCompletedIsNoticed(t *testing.T) {
	m := feed(t, newTestModel(t, "pd", 140, 30, nil), prefillDoneSnapshot())
	out := display(t, m)
	mustContain(t, out, "prefill new 2/2 (2 ready) old 0, rolled out · decode new 4/6 (4 ready) old 2")
	var buf bytes.Buffer
	p := newPlainPrinter(Config{Out: &buf, Clock: func() time.Time { return now }, Namespace: "default", Name: "pd"}.withDefaults())
	if _, err := p.print(rolesSnapshot()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "rolled out") {
		t.Errorf("a role rolled out at step 2:\n%s", buf.String())
	}
	if _, err := p.print(prefillDoneSnapshot()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(buf.String(), "role prefill: rolled out to revision pd-r2\n"); got != 1 {
		t.Errorf("the prefill notice printed %d times, want once:\n%s", got, buf.String())
	}
	if _, err := p.print(prefillDoneSnapshot()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(buf.String(), "role prefill: rolled out"); got != 1 {
		t.Errorf("the prefill notice printed %d times after a second snapshot, want once", got)
	}

	// At rest: every group of both roles on the current revision.
	rest := prefillDoneSnapshot()
	rest.Serving.Status.CurrentRevision = "pd-r2"
	rest.Pods = nil
	for g := range 2 {
		rest.Pods = append(rest.Pods, fixtures.RoleGroup("pd", v1.RolePrefill, g, 2, "pd-r2")...)
	}
	for g := range 6 {
		rest.Pods = append(rest.Pods, fixtures.RoleGroup("pd", v1.RoleDecode, g, 2, "pd-r2")...)
	}
	if out := display(t, feed(t, newTestModel(t, "pd", 140, 30, nil), rest)); strings.Contains(out, ", rolled out") {
		t.Errorf("a role at rest noticed as rolled out:\n%s", out)
	}
}

// The stored plan is of the spec the operator last saw: right after a set image (generation
// ahead of observedGeneration), or with a plan of another revision, the line says the plan is
// waited for, never the old plan's "complete".
func TestServingStepLineWaitsForAPlanOfTheCurrentSpec(t *testing.T) {
	s := rolesSnapshot()
	ms := s.Serving.DeepCopy()
	ms.Generation, ms.Status.ObservedGeneration = 3, 3
	if got, want := ServingStepLine(ms), "step 2/6: waiting for decode: 1 of 2 new groups ready"; got != want {
		t.Errorf("current plan: %q, want %q", got, want)
	}
	ahead := ms.DeepCopy()
	ahead.Generation = 4
	if got, want := ServingStepLine(ahead), "waiting for the operator to plan generation 4"; got != want {
		t.Errorf("spec changed since: %q, want %q", got, want)
	}
	other := ms.DeepCopy()
	other.Status.Plan.Revision = "qwen-0ld"
	if got, want := ServingStepLine(other), "waiting for the operator to plan generation 3"; got != want {
		t.Errorf("a plan of another revision: %q, want %q", got, want)
	}
	if got := ServingStepLine(&v1.ModelServing{}); got != "" {
		t.Errorf("no plan: %q, want none", got)
	}
}
