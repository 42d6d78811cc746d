package cli_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// roleGroup is how one group of a role is seeded: its revision and whether its pods are ready.
type roleGroup struct {
	rev   string
	ready bool
}

// seedRoleServing creates a serving with 2 prefill and 6 decode groups (2 pods each) on the new
// image, revisions r1 (the old image) and r2 (the spec), and the pods of the groups given per
// role; it returns the serving and the revisions.
func seedRoleServing(t *testing.T, ns, name string, prefill, decode []roleGroup, recordSpec bool) (*v1.ModelServing, string, string, []client.Object) {
	t.Helper()
	ms := seedServing(t, ns, fixtures.Serving(name, ns).Roles(2, 6, 2).GPUs(1).Image("vllm/vllm-openai:v0.12.0"))
	oldSpec := ms.Spec.DeepCopy()
	oldSpec.Engine.Image = "vllm/vllm-openai:v0.11.0"
	r1 := recordRevision(t, ms, *oldSpec, 1)
	r2 := ""
	if recordSpec {
		r2 = recordRevision(t, ms, ms.Spec, 2)
	}
	objs := []client.Object{ms}
	var seeded []*seededPod
	for role, groups := range map[v1.RoleName][]roleGroup{v1.RolePrefill: prefill, v1.RoleDecode: decode} {
		for g, rg := range groups {
			rev := map[string]string{"r1": r1, "r2": r2}[rg.rev]
			for w := 0; w < 2; w++ {
				b := fixtures.Pod(naming.RoleWorkloadName(name, role), g, w, rev).Label(v1.LabelName, name).Label(naming.LabelRole, string(role))
				if !rg.ready && w == 0 {
					b = b.NotReady()
				}
				p := seedPod(t, ns, 1, b, false)
				seeded = append(seeded, p)
				objs = append(objs, p.pod)
			}
		}
	}
	now := clockAfter(t, objs...)
	for _, p := range seeded {
		p.writeStatus(t, now, 5*time.Minute)
	}
	return ms, r1, r2, objs
}

func ready(rev string, n int) []roleGroup {
	out := make([]roleGroup, n)
	for i := range out {
		out[i] = roleGroup{rev: rev, ready: true}
	}
	return out
}

// roleStatus is the status.roles entry of a role with its counts.
func roleStatus(ms *v1.ModelServing, role v1.RoleName, replicas, readyN, updated, desired int32) v1.RoleStatus {
	return v1.RoleStatus{Name: role, Replicas: replicas, ReadyReplicas: readyN, UpdatedReplicas: updated,
		ReadyGroups: fmt.Sprintf("%d/%d", readyN, desired), Endpoint: naming.RoleEndpoint(ms, role)}
}

// seedMidRollout is a 2:6 serving at step 2 of 6: prefill 1 of 2 on r2, decode 2 of 6 on r2 with
// one of them still loading.
func seedMidRollout(t *testing.T, ns string) (*v1.ModelServing, time.Time) {
	t.Helper()
	prefill := []roleGroup{{"r1", true}, {"r2", true}}
	decode := append(ready("r1", 4), roleGroup{"r2", true}, roleGroup{"r2", false})
	ms, r1, r2, objs := seedRoleServing(t, ns, "pd", prefill, decode, true)
	now := clockAfter(t, objs...)
	at := now.Add(-12 * time.Minute)
	writeStatus(t, ms, v1.ModelServingStatus{
		Phase: v1.PhaseProgressing, Replicas: 8, ReadyReplicas: 7, UpdatedReplicas: 3, ReadyGroups: "7/8",
		CurrentRevision: r1, UpdateRevision: r2, Endpoint: naming.Endpoint(ms),
		Roles: []v1.RoleStatus{roleStatus(ms, v1.RolePrefill, 2, 2, 1, 2), roleStatus(ms, v1.RoleDecode, 6, 5, 2, 6)},
		// What the operator's planner reports for these groups (describe reads it, never plans).
		Plan: &v1.PlanStatus{Revision: r2, Step: 2, Steps: 6, State: v1.PlanWaiting, Message: "decode: 1 of 2 new groups ready",
			Roles: []v1.RolePlanTarget{{Name: v1.RolePrefill, Replicas: 2, UpdatedReplicas: 1}, {Name: v1.RoleDecode, Replicas: 6, UpdatedReplicas: 2}}},
		Conditions: conditions(at,
			[3]string{"True", v1.ReasonGroupsAvailable, "prefill 2 of 2, decode 5 of 6 groups ready"},
			[3]string{"True", v1.ReasonRollingOut, "step 2 of 6: prefill 1 of 2 groups updated; decode 2 of 6 groups updated; waiting for decode: 1 of 2 new groups ready"},
			[3]string{"False", v1.ReasonAsExpected, ""}),
	})
	return ms, now
}

func TestGetShowsEachRolesGroups(t *testing.T) {
	ns := namespace(t, "golden-roles-get")
	// The serving without roles first: the clock is an hour after the last object made, so both
	// are 60m old however slowly the API server answers.
	seedServing(t, ns, fixtures.Serving("single", ns).Replicas(2))
	_, now := seedMidRollout(t, ns)
	for _, tc := range []struct{ format, golden string }{{"table", "get-roles"}, {"wide", "get-roles-wide"}} {
		r := run(t, now, "-n", ns, "get", "-o", tc.format)
		expectCode(t, r, 0)
		golden(t, tc.golden, r.Out)
	}
	if r := run(t, now, "-n", ns, "get", "single"); strings.Contains(r.Out, "ROLES") {
		t.Errorf("a serving without roles got a ROLES column:\n%s", r.Out)
	}
}

func TestScaleARole(t *testing.T) {
	ns := namespace(t, "roles-scale")
	ms := seedServing(t, ns, fixtures.Serving("pd", ns).Roles(2, 6, 2))
	seedServing(t, ns, fixtures.Serving("single", ns).Replicas(2))
	now := clockAfter(t, ms)
	r := script(t, stdinClosed, toFile, "-n", ns, "scale", "pd", "--role", "decode", "--replicas", "8")
	expectCode(t, r, 0)
	if want := qualified("pd") + " role decode scaled to 8 group(s)\n"; r.Out != want {
		t.Errorf("scale --role printed %q, want %q", r.Out, want)
	}
	got := getServing(t, ns, "pd")
	if d, p := ptr.Deref(got.Spec.Role(v1.RoleDecode).Replicas, 0), ptr.Deref(got.Spec.Role(v1.RolePrefill).Replicas, 0); d != 8 || p != 2 {
		t.Errorf("after scale --role decode --replicas 8: decode %d prefill %d, want 8 and 2", d, p)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"scale", "pd", "--replicas", "3"}, []string{"--role", "prefill, decode"}},
		{[]string{"scale", "single", "--role", "decode", "--replicas", "3"}, []string{"--role decode", "no roles", "without --role"}},
		{[]string{"scale", "pd", "--role", "encode", "--replicas", "3"}, []string{"--role must be prefill or decode"}},
		{[]string{"scale", "pd", "--role", "prefill", "--replicas", "0"}, []string{"spec.roles"}},
		{[]string{"scale", "pd", "--role", "decode"}, []string{"--replicas is required"}},
	} {
		r := run(t, now, append([]string{"-n", ns}, tc.args...)...)
		wantError(t, r, 1, tc.want...)
	}
}

func TestRolloutPlan(t *testing.T) {
	ns := namespace(t, "golden-roles-plan")
	// Every group on r1 while the spec asks for a new image nobody recorded yet.
	_, _, _, objs := seedRoleServing(t, ns, "pd", ready("r1", 2), ready("r1", 6), false)
	// Every group on the spec's revision: nothing to do.
	same := seedServing(t, ns, fixtures.Serving("same", ns).Replicas(2).GroupSize(1))
	rev := recordRevision(t, same, same.Spec, 1)
	var sp []*seededPod
	for g := 0; g < 2; g++ {
		p := seedPod(t, ns, 1, fixtures.Pod("same", g, 0, rev), false)
		sp = append(sp, p)
		objs = append(objs, p.pod)
	}
	// A serving without roles, 4 groups on an old revision, maxSurge 0 / maxUnavailable 1.
	single := seedServing(t, ns, fixtures.Serving("single", ns).Replicas(4).Image("vllm/vllm-openai:v0.12.0"))
	old := single.Spec.DeepCopy()
	old.Engine.Image = "vllm/vllm-openai:v0.11.0"
	r1 := recordRevision(t, single, *old, 1)
	for g := 0; g < 4; g++ {
		p := seedPod(t, ns, 1, fixtures.Pod("single", g, 0, r1), false)
		sp = append(sp, p)
		objs = append(objs, p.pod)
	}
	now := clockAfter(t, objs...)
	for _, p := range sp {
		p.writeStatus(t, now, time.Minute)
	}

	r := script(t, stdinClosed, toFile, "-n", ns, "rollout", "plan", "pd")
	expectCode(t, r, 0)
	golden(t, "rollout-plan-roles", r.Out)
	for _, want := range []string{"1/6", "2/6", "6/6", "2/2", "6/6"} {
		if !strings.Contains(r.Out, want) {
			t.Errorf("rollout plan does not say %q:\n%s", want, r.Out)
		}
	}
	r = run(t, now, "-n", ns, "rollout", "plan", "single")
	expectCode(t, r, 0)
	golden(t, "rollout-plan-single", r.Out)
	r = run(t, now, "-n", ns, "rollout", "plan", "same")
	expectCode(t, r, 0)
	if !strings.Contains(r.Out, "no pending change") {
		t.Errorf("rollout plan of a serving on its spec's revision:\n%s", r.Out)
	}
	wantError(t, run(t, now, "-n", ns, "rollout", "plan"), 1, "kubectl llm rollout plan NAME")
	wantError(t, run(t, now, "-n", ns, "rollout", "plan", "nope"), 1, "nope")
}

func TestDescribeShowsEachRole(t *testing.T) {
	ns := namespace(t, "golden-roles-describe")
	_, now := seedMidRollout(t, ns)
	r := run(t, now, "-n", ns, "describe", "pd")
	expectCode(t, r, 0)
	golden(t, "describe-roles", r.Out)
	for _, want := range []string{"Role prefill", "Role decode", "step 2/6: waiting for decode: 1 of 2 new groups ready", "not ready: loading weights"} {
		if !strings.Contains(r.Out, want) {
			t.Errorf("describe of a serving with roles does not say %q", want)
		}
	}
	if strings.Contains(r.Out, "Warning: revision") {
		t.Errorf("describe warns of a revision with one role ready, but both are:\n%s", r.Out)
	}
}

func TestDescribeWarnsOfARevisionWithOneRoleReady(t *testing.T) {
	ns := namespace(t, "roles-describe-skew")
	// The new revision has a ready prefill group; its only decode group is still loading.
	prefill := []roleGroup{{"r1", true}, {"r2", true}}
	decode := append(ready("r1", 5), roleGroup{"r2", false})
	ms, r1, r2, objs := seedRoleServing(t, ns, "skew", prefill, decode, true)
	now := clockAfter(t, objs...)
	writeStatus(t, ms, v1.ModelServingStatus{Phase: v1.PhaseProgressing, CurrentRevision: r1, UpdateRevision: r2})
	r := script(t, stdinClosed, toPipe, "-n", ns, "describe", "skew")
	expectCode(t, r, 0)
	want := "Warning: revision " + r2 + " has 1 ready prefill group(s) but no ready decode group"
	if !strings.Contains(r.Out, want) {
		t.Errorf("describe does not warn %q:\n%s", want, r.Out)
	}
	// An operator that reports no status.plan: no plan line, and describe does not plan itself.
	if strings.Contains(r.Out, "Plan:") {
		t.Errorf("describe shows a plan the status does not have:\n%s", r.Out)
	}
	_ = now
}

func TestDeployWithRoles(t *testing.T) {
	ns := namespace(t, "roles-deploy")
	now := time.Now()
	args := []string{"-n", ns, "deploy", "pd", "--model", "Qwen/Qwen3-8B", "--gpus", "1",
		"--prefill-replicas", "2", "--decode-replicas", "6", "--prefill-group-size", "2", "--decode-group-size", "2", "--decode-gpus", "2"}
	r := script(t, stdinClosed, toFile, append(args, "--dry-run=client")...)
	expectCode(t, r, 0)
	golden(t, "deploy-roles-dry-run-client", r.Out)
	r = script(t, stdinClosed, toPipe, args...)
	expectCode(t, r, 0)
	ms := getServing(t, ns, "pd")
	p, d := ms.Spec.Role(v1.RolePrefill), ms.Spec.Role(v1.RoleDecode)
	if p == nil || d == nil || *p.Replicas != 2 || *d.Replicas != 6 || *p.GroupSize != 2 || *d.Resources.GPUs != 2 || p.Resources.GPUs != nil {
		t.Fatalf("deployed roles: %+v", ms.Spec.Roles)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--prefill-replicas", "2"}, []string{"--prefill-replicas given without --decode-replicas", "add --decode-replicas N"}},
		{[]string{"--decode-replicas", "6", "--prefill-group-size", "2"}, []string{"--prefill-group-size needs --prefill-replicas"}},
		{[]string{"--prefill-replicas", "0", "--decode-replicas", "6"}, []string{"--prefill-replicas 0 with --decode-replicas 6", "give every role groups"}},
		{[]string{"--prefill-replicas", "2", "--decode-replicas", "6", "--replicas", "3"}, []string{"--replicas does not apply with roles"}},
		{[]string{"--prefill-replicas", "2", "--decode-replicas", "6", "--partition", "1"}, []string{"--partition does not apply with roles"}},
	} {
		r := run(t, now, append([]string{"-n", ns, "deploy", "bad", "--model", "m"}, tc.args...)...)
		wantError(t, r, 1, tc.want...)
	}
	wantError(t, run(t, now, "-n", ns, "deploy", "-f", "x.yaml", "--decode-replicas", "2"), 1, "--decode-replicas cannot be combined with -f")
}

func TestRestartAGroupOfARole(t *testing.T) {
	ns := namespace(t, "roles-restart")
	_, _, _, objs := seedRoleServing(t, ns, "pd", ready("r1", 2), ready("r1", 6), true)
	seedServing(t, ns, fixtures.Serving("single", ns).Replicas(2))
	now := clockAfter(t, objs...)
	r := script(t, stdinClosed, toFile, "-n", ns, "restart", "pd", "--role", "decode", "--group", "3")
	expectCode(t, r, 0)
	if want := qualified("pd") + " role decode group 3 restarting: deleted leader pod pd-decode-3; the group is recreated\n"; r.Out != want {
		t.Errorf("restart --role --group printed %q, want %q", r.Out, want)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"restart", "pd", "--group", "1"}, []string{"pass --role with --group"}},
		{[]string{"restart", "single", "--role", "decode"}, []string{"--role decode", "no roles"}},
		{[]string{"restart", "pd", "--role", "encode"}, []string{"--role"}},
		{[]string{"restart", "pd", "--role", "prefill", "--group", "2"}, []string{"--group 2 does not exist", "role prefill has groups 0 to 1"}},
		{[]string{"restart", "single", "--role", "decode", "--group", "0"}, []string{"--role decode", "no roles"}},
	} {
		wantError(t, run(t, now, append([]string{"-n", ns}, tc.args...)...), 1, tc.want...)
	}
}

func TestRestartARoleSetsItsRestartIDAndLeavesTheOtherRole(t *testing.T) {
	ns := namespace(t, "roles-restart-role")
	_, _, _, objs := seedRoleServing(t, ns, "pd", ready("r1", 2), ready("r1", 6), true)
	now := clockAfter(t, objs...)
	r := run(t, now, "-n", ns, "restart", "pd", "--role", "decode")
	expectCode(t, r, 0)
	id := now.UTC().Format(time.RFC3339)
	if want := qualified("pd") + " role decode restarting (restart id " + id + "): its groups are recreated under its rollout rules, the other role's stay\n"; r.Out != want {
		t.Errorf("restart --role printed %q, want %q", r.Out, want)
	}
	ms := getServing(t, ns, "pd")
	if d := ms.Spec.Role(v1.RoleDecode); d.Restart == nil || d.Restart.ID != id {
		t.Fatalf("decode restart %+v, want id %s", d.Restart, id)
	}
	if p := ms.Spec.Role(v1.RolePrefill); p.Restart != nil || ms.Spec.Restart != nil {
		t.Errorf("prefill restart %+v, serving restart %+v; want neither set", p.Restart, ms.Spec.Restart)
	}
	// Again: a new id, so the role restarts again.
	r = run(t, now.Add(time.Minute), "-n", ns, "restart", "pd", "--role", "decode", "-o", "name")
	expectCode(t, r, 0)
	if r.Out != qualified("pd")+"\n" {
		t.Errorf("-o name printed %q", r.Out)
	}
	if again := getServing(t, ns, "pd").Spec.Role(v1.RoleDecode).Restart.ID; again == id {
		t.Errorf("a second restart kept the id %s", again)
	}
	// As scripts call it: stdin closed, output to a file.
	r = script(t, stdinClosed, toFile, "-n", ns, "restart", "pd", "--role", "prefill", "-o", "name")
	expectCode(t, r, 0)
	if p := getServing(t, ns, "pd").Spec.Role(v1.RolePrefill); r.Out != qualified("pd")+"\n" || p.Restart == nil {
		t.Errorf("script restart --role prefill printed %q, prefill restart %+v", r.Out, p.Restart)
	}
}
