package tui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// rolesSnapshot is a 2:6 serving at step 2 of 6: prefill 1 of 2 groups on r2, decode 2 of 6 on r2
// with the second still loading.
func rolesSnapshot() Snapshot {
	ms := fixtures.Serving("pd", "default").Roles(2, 6, 2).Obj()
	ms.Status.CurrentRevision, ms.Status.UpdateRevision = "pd-r1", "pd-r2"
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
	return Snapshot{Synced: true, Serving: ms, Pods: pods}
}

func TestRolePlanAndCountsFromWhatTheViewSees(t *testing.T) {
	s := rolesSnapshot()
	sum := status.Summarize(status.InputOf(status.Observed{Serving: s.Serving, Pods: s.Pods}, now))
	plan, ok := RolePlan(s.Serving, sum)
	if !ok {
		t.Fatal("no plan for a serving with roles")
	}
	if got, want := StepLine(plan), "step 2/6: waiting for decode: 1 of 2 new groups ready"; got != want {
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

// A restart of decode alone is planned as decode's own steps: the view shows decode moving and
// prefill staying at all its groups.
func TestARoleRestartIsPlannedAloneFromWhatTheViewSees(t *testing.T) {
	ms := fixtures.Serving("pd", "default").Roles(2, 6, 2).Obj()
	ms.Status.CurrentRevision, ms.Status.UpdateRevision = "pd-r1", "pd-r1"
	ms.Spec.Roles[1].Restart = &v1.RoleRestartSpec{ID: "d1"}
	var pods []corev1.Pod
	for g := range 2 {
		pods = append(pods, fixtures.RoleGroup("pd", v1.RolePrefill, g, 2, "pd-r1")...)
	}
	for g := range 6 {
		group := fixtures.RoleGroup("pd", v1.RoleDecode, g, 2, "pd-r1")
		if g == 5 { // restarted already
			for i := range group {
				group[i].Annotations = map[string]string{v1.AnnotationRestartID: v1.RoleRestartID("", "d1")}
			}
		}
		pods = append(pods, group...)
	}
	sum := status.Summarize(status.InputOf(status.Observed{Serving: ms, Pods: pods}, now))
	plan, ok := RolePlan(ms, sum)
	if !ok {
		t.Fatal("no plan")
	}
	if !plan.Restart || plan.Step != 2 || plan.Steps != 6 || plan.Roles[0].Updated != 2 || plan.Roles[1].Updated != 2 {
		t.Errorf("plan %+v; want decode's step 2 of 6 alone, prefill at its 2 groups", plan)
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
