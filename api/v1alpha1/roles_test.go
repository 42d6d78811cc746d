package v1alpha1_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

func TestForRoleIsTheServingWithTheRolesFieldsInPlace(t *testing.T) {
	serving := v1.ModelServingSpec{
		Model:     "Qwen/Qwen3-0.6B",
		Engine:    v1.EngineSpec{Type: v1.EngineVLLM, Args: []string{"--max-model-len", "8192"}, Env: []corev1.EnvVar{{Name: "A", Value: "1"}}, Port: 8000},
		Replicas:  ptr.To[int32](1),
		GroupSize: 1,
		Resources: v1.ResourceSpec{GPUs: ptr.To[int32](8), CPU: ptr.To(resource.MustParse("16"))},
		Rollout: v1.RolloutSpec{Strategy: v1.RollingUpdate, MaxSurge: ptr.To(intstr.FromInt32(0)),
			MaxUnavailable: ptr.To(intstr.FromInt32(1)), Partition: ptr.To[int32](0)},
		Scheduling: v1.SchedulingSpec{SchedulerName: "volcano", NodeSelector: map[string]string{"pool": "a"}},
		Roles: []v1.RoleSpec{
			{Name: v1.RolePrefill, Replicas: ptr.To[int32](2), GroupSize: ptr.To[int32](2),
				Resources:  v1.ResourceSpec{GPUs: ptr.To[int32](4)},
				Args:       []string{"--max-num-batched-tokens", "16384"},
				Env:        []corev1.EnvVar{{Name: "B", Value: "2"}},
				Scheduling: v1.SchedulingSpec{NodeSelector: map[string]string{"pool": "h100"}},
				Rollout:    &v1.RoleRolloutSpec{MaxSurge: ptr.To(intstr.FromInt32(1)), Partition: ptr.To[int32](1)}},
			{Name: v1.RoleDecode, Replicas: ptr.To[int32](6)},
		},
	}
	before := serving.DeepCopy()

	prefill, ok := serving.ForRole(v1.RolePrefill)
	if !ok {
		t.Fatal("no prefill role")
	}
	want := *serving.DeepCopy()
	want.Roles = nil
	want.Replicas = ptr.To[int32](2)
	want.GroupSize = 2
	want.Resources = v1.ResourceSpec{GPUs: ptr.To[int32](4), CPU: ptr.To(resource.MustParse("16"))}
	want.Engine.Args = []string{"--max-model-len", "8192", "--max-num-batched-tokens", "16384"}
	want.Engine.Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}
	want.Scheduling = v1.SchedulingSpec{SchedulerName: "volcano", NodeSelector: map[string]string{"pool": "h100"}}
	want.Rollout.MaxSurge = ptr.To(intstr.FromInt32(1))
	want.Rollout.Partition = ptr.To[int32](1)
	if diff := cmp.Diff(want, prefill); diff != "" {
		t.Errorf("prefill (-want +got):\n%s", diff)
	}

	decode, _ := serving.ForRole(v1.RoleDecode)
	want = *serving.DeepCopy()
	want.Roles = nil
	want.Replicas = ptr.To[int32](6)
	if diff := cmp.Diff(want, decode); diff != "" {
		t.Errorf("decode takes every other field from the serving (-want +got):\n%s", diff)
	}

	if _, ok := serving.ForRole("encode"); ok {
		t.Error("ForRole found a role the serving does not have")
	}
	if diff := cmp.Diff(*before, serving); diff != "" {
		t.Errorf("ForRole changed the serving (-before +after):\n%s", diff)
	}
	// Appending the role's args must not write into the serving's backing array.
	serving.Engine.Args = append(make([]string, 0, 10), serving.Engine.Args...)
	p1, _ := serving.ForRole(v1.RolePrefill)
	d1, _ := serving.ForRole(v1.RoleDecode)
	if len(d1.Engine.Args) != 2 || p1.Engine.Args[2] != "--max-num-batched-tokens" {
		t.Errorf("args shared between roles: prefill %q, decode %q", p1.Engine.Args, d1.Engine.Args)
	}
}

// A serving's partition is a group index: with roles it never reaches a role.
func TestForRoleNeverTakesTheServingsPartition(t *testing.T) {
	s := v1.ModelServingSpec{Rollout: v1.RolloutSpec{Partition: ptr.To[int32](3)}, Roles: []v1.RoleSpec{{Name: v1.RoleDecode}}}
	d, _ := s.ForRole(v1.RoleDecode)
	if d.Rollout.Partition == nil || *d.Rollout.Partition != 0 {
		t.Errorf("partition = %v, want 0", d.Rollout.Partition)
	}
}

// A role's pods are created for the serving's restart id and the role's: a new id of either
// restarts the role, and a role never restarted keeps the serving's id (its pods stay put).
func TestForRoleRestartIDChangesWithTheServingsAndTheRoles(t *testing.T) {
	id := func(s v1.ModelServingSpec, r v1.RoleName) string {
		rs, _ := s.ForRole(r)
		if rs.Restart == nil {
			return "<nil>"
		}
		return rs.Restart.ID
	}
	s := v1.ModelServingSpec{Roles: []v1.RoleSpec{{Name: v1.RolePrefill}, {Name: v1.RoleDecode}}}
	if got := id(s, v1.RoleDecode); got != "<nil>" {
		t.Errorf("never restarted: %s, want no restart", got)
	}
	s.Restart = &v1.RestartSpec{ID: "a"}
	if got := id(s, v1.RoleDecode); got != "a" {
		t.Errorf("serving restarted: %s, want a", got)
	}
	s.Roles[1].Restart = &v1.RoleRestartSpec{ID: "x"}
	if p, d := id(s, v1.RolePrefill), id(s, v1.RoleDecode); p != "a" || d != "a/role:x" {
		t.Errorf("decode restarted: prefill %s, decode %s; want a and a/role:x", p, d)
	}
	s.Restart = nil
	if got := id(s, v1.RoleDecode); got != "/role:x" {
		t.Errorf("decode restarted alone: %s, want /role:x", got)
	}
}

// A role's restart id is unambiguous: the serving's id cannot contain the separator (the CRD
// refuses it), so the first separator splits it, whatever the role's id holds; every pair of ids
// below gives a different one.
func TestRoleRestartIDsOfDifferentPairsDiffer(t *testing.T) {
	seen := map[string][2]string{}
	for _, serving := range []string{"", "a", "a/role", "a/", "role:b"} {
		for _, role := range []string{"", "b", "b/role:c", "/role:", "role:b"} {
			if strings.Contains(serving, v1.RoleRestartSeparator) {
				t.Fatalf("the serving id %q holds the separator", serving)
			}
			id := v1.RoleRestartID(serving, role)
			if prev, ok := seen[id]; ok {
				t.Errorf("serving %q role %q and serving %q role %q give the same id %q", serving, role, prev[0], prev[1], id)
			}
			seen[id] = [2]string{serving, role}
		}
	}
}
