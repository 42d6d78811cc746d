package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// partitions is each role's spec.roles[].rollout.partition, -1 when unset.
func partitions(ms *v1.ModelServing) (prefill, decode int32) {
	of := func(name v1.RoleName) int32 {
		r := ms.Spec.Role(name)
		if r == nil || r.Rollout == nil {
			return -1
		}
		return ptr.Deref(r.Rollout.Partition, -1)
	}
	return of(v1.RolePrefill), of(v1.RoleDecode)
}

func TestCanaryAcrossRoles(t *testing.T) {
	ns := namespace(t, "canary-roles")
	ms := seedServing(t, ns, fixtures.Serving("pd", ns).Roles(2, 8, 2).Image("vllm/vllm-openai:v0.11.0"))
	// decode has a rollout limit of its own, which the canary commands keep.
	ms.Spec.Role(v1.RoleDecode).Rollout = &v1.RoleRolloutSpec{MaxSurge: ptr.To(intstr.FromInt32(2))}
	if err := env.Client.Update(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	current := recordRevision(t, ms, ms.Spec, 1)
	writeStatus(t, ms, v1.ModelServingStatus{CurrentRevision: current, UpdateRevision: current})
	now := time.Now()

	// As scripts call it: stdin closed, output to a file.
	r := script(t, stdinClosed, toFile, "-n", ns, "canary", "pd", "--image", "vllm/vllm-openai:v0.12.0", "--groups", "1")
	expectCode(t, r, 0)
	golden(t, "canary-roles", r.Out)
	got := getServing(t, ns, "pd")
	if p, d := partitions(got); p != 1 || d != 7 || got.Spec.Engine.Image != "vllm/vllm-openai:v0.12.0" {
		t.Fatalf("canary --groups 1: partitions prefill %d decode %d, image %s; want 1, 7 and v0.12.0", p, d, got.Spec.Engine.Image)
	}
	if ptr.Deref(got.Spec.Rollout.Partition, 0) != 0 {
		t.Errorf("canary of a serving with roles set spec.rollout.partition %d", *got.Spec.Rollout.Partition)
	}

	r = script(t, stdinClosed, toFile, "-n", ns, "canary", "promote", "pd")
	expectCode(t, r, 0)
	if want := qualified("pd") + " canary promoted: every group of every role moves to the new revision\n"; r.Out != want {
		t.Errorf("promote printed %q, want %q", r.Out, want)
	}
	got = getServing(t, ns, "pd")
	if p, d := partitions(got); p != -1 || d != -1 || got.Spec.Engine.Image != "vllm/vllm-openai:v0.12.0" {
		t.Fatalf("promote: partitions prefill %d decode %d, image %s; want both cleared and the canary's image", p, d, got.Spec.Engine.Image)
	}
	if got.Spec.Role(v1.RolePrefill).Rollout != nil || got.Spec.Role(v1.RoleDecode).Rollout.MaxSurge.IntValue() != 2 {
		t.Errorf("promote: prefill rollout %+v (want none), decode %+v (want its maxSurge 2 kept)", got.Spec.Role(v1.RolePrefill).Rollout, got.Spec.Role(v1.RoleDecode).Rollout)
	}
	wantError(t, run(t, now, "-n", ns, "canary", "promote", "pd"), 1, "has no canary to promote", "spec.roles[].rollout.partition")

	// A fraction keeps the ratio: 25% of 2 and 8 groups is 1 and 2.
	r = run(t, now, "-n", ns, "canary", "pd", "--model", "Qwen/Qwen3-1.7B", "--fraction", "25%", "-o", "name")
	expectCode(t, r, 0)
	if r.Out != qualified("pd")+"\n" {
		t.Errorf("-o name printed %q", r.Out)
	}
	got = getServing(t, ns, "pd")
	if p, d := partitions(got); p != 1 || d != 6 || got.Spec.Model != "Qwen/Qwen3-1.7B" {
		t.Fatalf("canary --fraction 25%%: partitions prefill %d decode %d, model %s; want 1, 6 and Qwen3-1.7B", p, d, got.Spec.Model)
	}

	r = script(t, stdinClosed, toFile, "-n", ns, "canary", "abort", "pd")
	expectCode(t, r, 0)
	if want := qualified("pd") + " canary aborted: every group of every role returns to revision " + current + "\n"; r.Out != want {
		t.Errorf("abort printed %q, want %q", r.Out, want)
	}
	got = getServing(t, ns, "pd")
	if p, d := partitions(got); p != -1 || d != -1 || got.Spec.Engine.Image != "vllm/vllm-openai:v0.11.0" || got.Spec.Model != "Qwen/Qwen3-0.6B" {
		t.Fatalf("abort: partitions prefill %d decode %d, image %s, model %s; want cleared and the current revision's v0.11.0 / Qwen3-0.6B",
			p, d, got.Spec.Engine.Image, got.Spec.Model)
	}
	if pr, dr := *got.Spec.Role(v1.RolePrefill).Replicas, *got.Spec.Role(v1.RoleDecode).Replicas; pr != 2 || dr != 8 {
		t.Errorf("abort changed the roles' replicas to %d and %d", pr, dr)
	}
	if d := got.Spec.Role(v1.RoleDecode).Rollout; d == nil || d.MaxSurge.IntValue() != 2 {
		t.Errorf("abort dropped decode's maxSurge: %+v", d)
	}
	wantError(t, run(t, now, "-n", ns, "canary", "abort", "pd"), 1, "has no canary to abort", current)

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--groups", "3"}, []string{"--groups 3 is more than the 2 group(s) of role prefill", "--fraction"}},
		{[]string{"--groups", "1", "--fraction", "25%"}, []string{"--groups and --fraction cannot be combined"}},
		{[]string{"--fraction", "0%"}, []string{"--fraction must be a percentage from 1% to 100%", `"0%"`}},
		{[]string{"--fraction", "0.25"}, []string{"--fraction must be a percentage"}},
		{nil, []string{"--groups or --fraction is required"}},
		{[]string{"--groups", "0"}, []string{"--groups must be 1 or more"}},
	} {
		args := append([]string{"-n", ns, "canary", "pd", "--image", "vllm/vllm-openai:v0.13.0"}, tc.args...)
		wantError(t, run(t, now, args...), 1, tc.want...)
	}
	if got := getServing(t, ns, "pd"); got.Spec.Engine.Image != "vllm/vllm-openai:v0.11.0" {
		t.Errorf("a refused canary changed the image to %s", got.Spec.Engine.Image)
	}
}

func TestCanaryFractionWithoutRoles(t *testing.T) {
	ns := namespace(t, "canary-fraction")
	seedServing(t, ns, fixtures.Serving("qwen", ns).Replicas(3).Image("vllm/vllm-openai:v0.11.0"))
	r := run(t, time.Now(), "-n", ns, "canary", "qwen", "--image", "vllm/vllm-openai:v0.12.0", "--fraction", "10%")
	expectCode(t, r, 0)
	if want := qualified("qwen") + " canary started: groups 2 and above (1 of 3) move to image vllm/vllm-openai:v0.12.0\n"; !strings.HasPrefix(r.Out, want) {
		t.Errorf("canary --fraction printed %q", r.Out)
	}
	if got := getServing(t, ns, "qwen"); ptr.Deref(got.Spec.Rollout.Partition, -1) != 2 {
		t.Errorf("canary --fraction 10%% of 3 groups: partition %v, want 2 (at least one group)", got.Spec.Rollout.Partition)
	}
}

// TestGetWatchAddsTheRolesColumnForALaterServingWithRoles: a watch that listed no serving with
// roles prints a header with ROLES above the first one it sees, and the lines after follow it.
func TestGetWatchAddsTheRolesColumnForALaterServingWithRoles(t *testing.T) {
	ns := namespace(t, "get-watch-roles")
	single := seedServing(t, ns, fixtures.Serving("single", ns).Replicas(2))
	now := clockAfter(t, single)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, done := start(ctx, now, "-n", ns, "get", "-w")
	waitFor(t, out, "single   Qwen/Qwen3-0.6B")
	pd := seedServing(t, ns, fixtures.Serving("pd", ns).Roles(2, 6, 2))
	waitFor(t, out, "prefill 0/2, decode 0/6")
	if !strings.Contains(out.String(), "0/8") {
		t.Errorf("a serving with roles and no status yet is not 0/8 ready:\n%s", out.String())
	}
	writeStatus(t, pd, v1.ModelServingStatus{Phase: v1.PhaseReady, Replicas: 8, ReadyReplicas: 8, UpdatedReplicas: 8, ReadyGroups: "8/8",
		Roles: []v1.RoleStatus{roleStatus(pd, v1.RolePrefill, 2, 2, 2, 2), roleStatus(pd, v1.RoleDecode, 6, 6, 6, 6)}})
	waitFor(t, out, "prefill 2/2, decode 6/6")
	writeStatus(t, single, v1.ModelServingStatus{Phase: v1.PhaseReady, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, ReadyGroups: "2/2"})
	waitFor(t, out, "single   Qwen/Qwen3-0.6B   2/2")
	cancel()
	r := <-done
	expectCode(t, r, 0)
	lines := strings.Split(strings.TrimSpace(r.Out), "\n")
	if len(lines) < 6 || strings.Count(r.Out, "ROLES") != 1 || !strings.HasPrefix(lines[2], "NAME") || !strings.Contains(lines[2], "ROLES") || strings.Contains(lines[0], "ROLES") {
		t.Fatalf("get -w with a later serving with roles printed:\n%s", r.Out)
	}
	col := strings.Index(lines[2], "ROLES")
	for _, l := range lines[3:] {
		if len(l) < col || (l[col:col+1] == " " || l[col-1:col] != " ") {
			t.Errorf("line %q does not put its ROLES cell under the header's (column %d):\n%s", l, col, r.Out)
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "single") || last[col:col+1] != "-" {
		t.Errorf("the serving without roles after the new header shows no - under ROLES: %q", last)
	}
}
