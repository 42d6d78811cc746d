package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// roles is a valid spec with both roles as unstructured content; each bad case edits a copy.
func roles() map[string]any {
	return map[string]any{
		"model": "Qwen/Qwen3-0.6B",
		"roles": []any{
			map[string]any{"name": "prefill", "replicas": 2, "groupSize": 2},
			map[string]any{"name": "decode", "replicas": 6, "groupSize": 2},
		},
	}
}

// role is the i-th role of a spec made by roles().
func role(s map[string]any, i int) map[string]any { return s["roles"].([]any)[i].(map[string]any) }

func TestServingWithRolesRoundTripsWithRoleDefaults(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	sent := []v1.RoleSpec{
		{
			Name: v1.RolePrefill, Replicas: ptr.To[int32](2), GroupSize: ptr.To[int32](2),
			Resources:  v1.ResourceSpec{GPUs: ptr.To[int32](8), Memory: ptr.To(resource.MustParse("256Gi"))},
			Args:       []string{"--max-num-batched-tokens", "16384"},
			Env:        []corev1.EnvVar{{Name: "UCX_TLS", Value: "all"}},
			Scheduling: v1.SchedulingSpec{NodeSelector: map[string]string{"nvidia.com/gpu.product": "H100"}},
			Rollout:    &v1.RoleRolloutSpec{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)), Partition: ptr.To[int32](1)},
		},
		{Name: v1.RoleDecode, GroupSize: ptr.To[int32](2)}, // replicas left to the default
	}
	ms := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Name: "pd", Namespace: ns},
		Spec: v1.ModelServingSpec{Model: "Qwen/Qwen3-0.6B", Roles: sent}}
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatalf("create: %v", err)
	}
	var got v1.ModelServing
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ms), &got); err != nil {
		t.Fatal(err)
	}
	want := []v1.RoleSpec{sent[0], sent[1]}
	want[1].Replicas = ptr.To[int32](1)
	if diff := cmp.Diff(want, got.Spec.Roles); diff != "" {
		t.Errorf("roles changed on their way through the API server (-want +read):\n%s", diff)
	}
	// The serving-wide defaults are filled as without roles: the roles take them over.
	if got.Spec.Replicas == nil || *got.Spec.Replicas != 1 || got.Spec.GroupSize != 1 || *got.Spec.Rollout.Partition != 0 {
		t.Errorf("serving-wide defaults = replicas %v, groupSize %d, partition %v; want 1, 1, 0",
			got.Spec.Replicas, got.Spec.GroupSize, got.Spec.Rollout.Partition)
	}
}

func TestGoodRoleSpecsAreAccepted(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cases := []struct {
		name string
		edit func(spec map[string]any)
	}{
		{"both roles", func(map[string]any) {}},
		{"decode listed first", func(s map[string]any) {
			r := s["roles"].([]any)
			s["roles"] = []any{r[1], r[0]}
		}},
		{"every role scaled to 0", func(s map[string]any) { role(s, 0)["replicas"] = 0; role(s, 1)["replicas"] = 0 }},
		{"the serving's partition left at 0", func(s map[string]any) { s["rollout"] = map[string]any{"partition": 0} }},
		{"a canary in each role", func(s map[string]any) {
			role(s, 0)["rollout"] = map[string]any{"partition": 1}
			role(s, 1)["rollout"] = map[string]any{"partition": 5, "maxSurge": "25%"}
		}},
		{"a role's surge 0 and its unavailable from the serving", func(s map[string]any) {
			role(s, 0)["rollout"] = map[string]any{"maxSurge": 0}
		}},
		{"recreate without role surge", func(s map[string]any) {
			s["rollout"] = map[string]any{"strategy": "Recreate"}
			role(s, 1)["rollout"] = map[string]any{"maxUnavailable": "100%"}
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := roles()
			tc.edit(spec)
			if err := env.Client.Create(ctx, modelServing(ns, fmt.Sprintf("good%dr", i), spec)); err != nil {
				t.Errorf("refused %v: %v", spec, err)
			}
		})
	}
	name := strings.Repeat("r", v1.MaxRoleNameLength)
	if err := env.Client.Create(ctx, modelServing(ns, name, roles())); err != nil {
		t.Errorf("a %d-character name with roles refused: %v", len(name), err)
	}
}

func TestBadRoleSpecsAreRefusedWithAMessage(t *testing.T) {
	assertRefused(t, roles, []refusal{
		{"only prefill", func(s map[string]any) { s["roles"] = s["roles"].([]any)[:1] }, "spec.roles must name both a prefill and a decode role"},
		{"only prefill is fewer than 2 items", func(s map[string]any) { s["roles"] = s["roles"].([]any)[:1] }, "spec.roles in body should have at least 2 items"},
		{"prefill twice", func(s map[string]any) { role(s, 1)["name"] = "prefill" }, "spec.roles[1]: Duplicate value"},
		{"prefill twice names what is missing", func(s map[string]any) { role(s, 1)["name"] = "prefill" }, "spec.roles must name both a prefill and a decode role"},
		{"an unknown role", func(s map[string]any) { role(s, 1)["name"] = "encode" }, `spec.roles[1].name: Unsupported value: "encode"`},
		{"a role without a name", func(s map[string]any) { delete(role(s, 1), "name") }, "spec.roles[1].name: Required value"},
		{"three roles", func(s map[string]any) {
			s["roles"] = append(s["roles"].([]any), map[string]any{"name": "encode"})
		}, "spec.roles: Too many: 3: must have at most 2 items"},
		{"decode without groups", func(s map[string]any) { role(s, 1)["replicas"] = 0 }, "spec.roles[].replicas must be 0 for every role or for none"},
		{"prefill without groups", func(s map[string]any) { role(s, 0)["replicas"] = 0 }, "spec.roles[].replicas must be 0 for every role or for none"},
		{"role replicas over 1000", func(s map[string]any) { role(s, 1)["replicas"] = 1001 }, "spec.roles[].replicas is the number of groups of the role and must be between 0 and 1000"},
		{"negative role replicas", func(s map[string]any) { role(s, 0)["replicas"] = -1 }, "spec.roles[].replicas is the number of groups of the role"},
		{"role group size 0", func(s map[string]any) { role(s, 0)["groupSize"] = 0 }, "spec.roles[].groupSize is the number of pods per group of the role (leader + workers) and must be between 1 and 64"},
		{"role group size 65", func(s map[string]any) { role(s, 1)["groupSize"] = 65 }, "spec.roles[].groupSize"},
		{"the serving's replicas beside roles", func(s map[string]any) { s["replicas"] = 3 }, "spec.replicas does not apply with spec.roles"},
		{"the serving's partition beside roles", func(s map[string]any) { s["rollout"] = map[string]any{"partition": 2} }, "spec.rollout.partition does not apply with spec.roles"},
		{"role surge and unavailable both 0", func(s map[string]any) {
			role(s, 0)["rollout"] = map[string]any{"maxSurge": 0, "maxUnavailable": "0%"}
		}, "spec.roles[].rollout.maxSurge and spec.roles[].rollout.maxUnavailable cannot both be 0"},
		{"role surge with Recreate", func(s map[string]any) {
			s["rollout"] = map[string]any{"strategy": "Recreate"}
			role(s, 1)["rollout"] = map[string]any{"maxSurge": 1}
		}, "spec.roles[].rollout.maxSurge must be 0 with strategy Recreate"},
		{"role surge not a number or percent", func(s map[string]any) { role(s, 0)["rollout"] = map[string]any{"maxSurge": "one"} }, "spec.roles[].rollout.maxSurge must be a number of groups between 0 and 1000 or a percentage"},
		{"negative role unavailable", func(s map[string]any) { role(s, 0)["rollout"] = map[string]any{"maxUnavailable": -1} }, "spec.roles[].rollout.maxUnavailable must be a number of groups between 0 and 1000"},
		{"negative role partition", func(s map[string]any) { role(s, 1)["rollout"] = map[string]any{"partition": -1} }, "spec.roles[].rollout.partition must be between 0 and 1000"},
		{"an empty role restart id", func(s map[string]any) { role(s, 1)["restart"] = map[string]any{"id": " "} }, "spec.roles[].restart.id must not be empty"},
		// "a/role:b" alone would be the id of serving restart "a" with role restart "b".
		{"a serving restart id with the role separator", func(s map[string]any) { s["restart"] = map[string]any{"id": "a/role:b"} }, "spec.restart.id must not contain '/role:'"},
		{"a role restart without an id", func(s map[string]any) { role(s, 1)["restart"] = map[string]any{} }, "spec.roles[1].restart.id: Required value"},
		{"role gpus out of range", func(s map[string]any) { role(s, 0)["resources"] = map[string]any{"gpus": 65} }, "spec.roles[0].resources.gpus: Invalid value"},
		{"role scheduler not a DNS name", func(s map[string]any) {
			role(s, 1)["scheduling"] = map[string]any{"schedulerName": "My_Scheduler"}
		}, "spec.roles[1].scheduling.schedulerName: Invalid value"},
	})
}

// The derived names of the roles budget the serving's name; the names the roles' objects take
// cannot be a serving's own.
func TestNamesThatCannotCarryRolesAreRefused(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	bad := []struct {
		name string
		spec map[string]any
		want string
	}{
		{strings.Repeat("r", v1.MaxRoleNameLength+1), roles(), "metadata.name must be at most 39 characters for a serving with spec.roles"},
		{"qwen-decode", base(), "metadata.name must not end in -prefill or -decode"},
		{"qwen-prefill", roles(), "metadata.name must not end in -prefill or -decode"},
	}
	for _, tc := range bad {
		err := env.Client.Create(ctx, modelServing(ns, tc.name, tc.spec))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want a refusal saying %q", tc.name, err, tc.want)
		}
	}
	// Without roles the name keeps its longer budget; -prefill or -decode inside a name is fine.
	for _, name := range []string{strings.Repeat("s", v1.MaxNameLength), "prefill-cache", "decoder"} {
		if err := env.Client.Create(ctx, modelServing(ns, name, base())); err != nil {
			t.Errorf("%q without roles refused: %v", name, err)
		}
	}
}

func TestRolesCannotBeAddedOrRemovedButCanBeScaled(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	single := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Name: "single", Namespace: ns}, Spec: v1.ModelServingSpec{Model: "m"}}
	if err := env.Client.Create(ctx, single); err != nil {
		t.Fatal(err)
	}
	single.Spec.Roles = []v1.RoleSpec{{Name: v1.RolePrefill}, {Name: v1.RoleDecode}}
	if err := env.Client.Update(ctx, single); err == nil || !strings.Contains(err.Error(), "spec.roles cannot be added to or removed from an existing serving") {
		t.Errorf("adding roles: got %v, want the refusal", err)
	}

	pd := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Name: "pd", Namespace: ns}, Spec: v1.ModelServingSpec{Model: "m",
		Roles: []v1.RoleSpec{{Name: v1.RolePrefill, Replicas: ptr.To[int32](2)}, {Name: v1.RoleDecode, Replicas: ptr.To[int32](6)}}}}
	if err := env.Client.Create(ctx, pd); err != nil {
		t.Fatal(err)
	}
	pd.Spec.Roles[1].Replicas = ptr.To[int32](8)
	pd.Spec.Roles[0].Rollout = &v1.RoleRolloutSpec{Partition: ptr.To[int32](1)}
	if err := env.Client.Update(ctx, pd); err != nil {
		t.Fatalf("scaling a role and setting its canary must be allowed: %v", err)
	}
	removed := pd.DeepCopy()
	removed.Spec.Roles = nil
	if err := env.Client.Update(ctx, removed); err == nil || !strings.Contains(err.Error(), "spec.roles cannot be added to or removed from an existing serving") {
		t.Errorf("removing roles: got %v, want the refusal", err)
	}

	// The scale subresource sets spec.replicas, which a serving with roles does not use.
	scale := &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(ctx, pd, scale); err != nil {
		t.Fatalf("get scale: %v", err)
	}
	scale.Spec.Replicas = 3
	if err := env.Client.SubResource("scale").Update(ctx, pd, client.WithSubResourceBody(scale)); err == nil ||
		!strings.Contains(err.Error(), "spec.replicas does not apply with spec.roles") || !strings.Contains(err.Error(), "kubectl llm scale NAME --role decode --replicas N") {
		t.Errorf("kubectl scale of a serving with roles: got %v, want the refusal", err)
	}
}

func TestARoleRestartCanBeSetAndChangedButNotRemoved(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ms := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Name: "pd", Namespace: ns}, Spec: v1.ModelServingSpec{Model: "m", Roles: []v1.RoleSpec{
		{Name: v1.RolePrefill, Replicas: ptr.To[int32](2)}, {Name: v1.RoleDecode, Replicas: ptr.To[int32](6)},
	}}}
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatalf("create without a role restart must be allowed: %v", err)
	}
	for _, id := range []string{"1", "2"} {
		ms.Spec.Roles[1].Restart = &v1.RoleRestartSpec{ID: id}
		if err := env.Client.Update(ctx, ms); err != nil {
			t.Fatalf("setting decode's restart.id to %s must be allowed: %v", id, err)
		}
	}
	// Prefill's restart is independent: setting it leaves decode's alone.
	ms.Spec.Roles[0].Restart = &v1.RoleRestartSpec{ID: "p1"}
	if err := env.Client.Update(ctx, ms); err != nil {
		t.Fatalf("setting prefill's restart must be allowed: %v", err)
	}
	ms.Spec.Roles[1].Restart = nil
	err := env.Client.Update(ctx, ms)
	if err == nil || !strings.Contains(err.Error(), "spec.roles[].restart cannot be removed once set") {
		t.Fatalf("removing decode's restart: got %v, want a refusal saying it cannot be removed", err)
	}
}
