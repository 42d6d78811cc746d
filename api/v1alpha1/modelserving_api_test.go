package v1alpha1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop control plane:", err)
	}
	os.Exit(code)
}

func namespace(t *testing.T) string { return testenv.Namespace(t, env.Client, "api-") }

func TestFullModelServingRoundTrips(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	want := v1.ModelServingSpec{
		Model: "Qwen/Qwen3-0.6B",
		Engine: v1.EngineSpec{
			Type:  v1.EngineSGLang,
			Image: "lmsysorg/sglang:v0.5.0",
			Args:  []string{"--log-level", "debug"},
			Env:   []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}},
			Port:  30000,
		},
		Replicas:  ptr.To[int32](4),
		GroupSize: 2,
		Resources: v1.ResourceSpec{
			GPUs:   ptr.To[int32](8),
			CPU:    ptr.To(resource.MustParse("16")),
			Memory: ptr.To(resource.MustParse("128Gi")),
		},
		Weights:       &v1.WeightsSpec{Source: "pvc://model-cache/qwen3", SharedMemory: ptr.To(resource.MustParse("16Gi"))},
		Readiness:     v1.ReadinessSpec{Path: "/ready", StartupTimeout: &metav1.Duration{Duration: 45 * time.Minute}},
		RestartPolicy: v1.RestartPolicyNone,
		Rollout: v1.RolloutSpec{
			Strategy:         v1.RollingUpdate,
			MaxSurge:         ptr.To(intstr.FromString("25%")),
			MaxUnavailable:   ptr.To(intstr.FromInt32(0)),
			Partition:        ptr.To[int32](2),
			Paused:           true,
			ProgressDeadline: &metav1.Duration{Duration: time.Hour},
		},
		Restart: &v1.RestartSpec{ID: "2026-11-29T10:00:00Z"},
		Scheduling: v1.SchedulingSpec{
			SchedulerName:     "volcano",
			NodeSelector:      map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
			Tolerations:       []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			PriorityClassName: "inference",
			ExclusiveTopology: "topology.kubernetes.io/zone",
		},
		// Compact with sorted keys: how the API server writes it back.
		Template: &runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"team":"search"}},"spec":{"containers":[{"env":[{"name":"HF_HUB_OFFLINE","value":"1"}],"name":"engine"}]}}`)},
	}
	ms := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Name: "full", Namespace: ns}, Spec: *want.DeepCopy()}
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatalf("create: %v", err)
	}
	var got v1.ModelServing
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ms), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("spec changed on its way through the API server (-sent +read):\n%s", diff)
	}

	got.Status = v1.ModelServingStatus{
		ObservedGeneration: got.Generation,
		Conditions: []metav1.Condition{{
			Type: v1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: v1.ReasonGroupsAvailable,
			Message: "4 of 4 groups ready", LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)),
		}},
		Phase: v1.PhaseReady, Replicas: 4, ReadyReplicas: 4, UpdatedReplicas: 4, ReadyGroups: "4/4",
		Selector: "serving.kubectl-llm.dev/name=full", CurrentRevision: "full-abc", UpdateRevision: "full-abc",
		CollisionCount: ptr.To[int32](0), RestartID: "2026-11-29T10:00:00Z",
		Groups:   []v1.GroupStatus{{Index: 0, Revision: "full-abc", Ready: true, ReadyPods: 2, Size: 2}},
		Endpoint: "full.default.svc:30000",
	}
	wantStatus := *got.Status.DeepCopy()
	if err := env.Client.Status().Update(ctx, &got); err != nil {
		t.Fatalf("status update: %v", err)
	}
	var again v1.ModelServing
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ms), &again); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantStatus, again.Status); diff != "" {
		t.Errorf("status changed on its way through the API server (-sent +read):\n%s", diff)
	}
}

func TestServerFillsDefaults(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ms := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Name: "minimal", Namespace: ns}, Spec: v1.ModelServingSpec{Model: "Qwen/Qwen3-0.6B"}}
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatalf("create: %v", err)
	}
	want := v1.ModelServingSpec{
		Model:         "Qwen/Qwen3-0.6B",
		Engine:        v1.EngineSpec{Type: v1.EngineVLLM, Port: 8000},
		Replicas:      ptr.To[int32](1),
		GroupSize:     1,
		Readiness:     v1.ReadinessSpec{Path: "/health", StartupTimeout: &metav1.Duration{Duration: 20 * time.Minute}},
		RestartPolicy: v1.RecreateGroupOnPodRestart,
		Rollout: v1.RolloutSpec{
			Strategy:         v1.RollingUpdate,
			MaxSurge:         ptr.To(intstr.FromInt32(0)),
			MaxUnavailable:   ptr.To(intstr.FromInt32(1)),
			Partition:        ptr.To[int32](0),
			ProgressDeadline: &metav1.Duration{Duration: 30 * time.Minute},
		},
	}
	if diff := cmp.Diff(want, ms.Spec); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

// base is a valid minimal spec as unstructured content; each bad case edits a copy.
func base() map[string]any {
	return map[string]any{"model": "Qwen/Qwen3-0.6B"}
}

// refusal is a bad spec (a valid one edited) and what the API server's refusal must say.
type refusal struct {
	name string
	edit func(spec map[string]any)
	want string
}

// assertRefused creates each edited spec and checks that it is refused with its message. The
// names are valid ones, so that the refusal is the spec's own.
func assertRefused(t *testing.T, valid func() map[string]any, cases []refusal) {
	t.Helper()
	ns := namespace(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := valid()
			tc.edit(spec)
			err := env.Client.Create(context.Background(), modelServing(ns, fmt.Sprintf("bad%dx", i), spec))
			if err == nil {
				t.Fatalf("the API server accepted %v; want a refusal containing %q", spec, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("refusal does not say what to fix:\n got: %v\nwant: …%s…", err, tc.want)
			}
		})
	}
}

func TestBadSpecsAreRefusedWithAMessage(t *testing.T) {
	assertRefused(t, base, []refusal{
		{"empty model", func(s map[string]any) { s["model"] = "" }, "spec.model must name the model to serve"},
		{"blank model", func(s map[string]any) { s["model"] = "   " }, "spec.model must name the model to serve"},
		{"missing model", func(s map[string]any) { delete(s, "model") }, "spec.model: Required value"},
		{"group size zero", func(s map[string]any) { s["groupSize"] = 0 }, "spec.groupSize is the number of pods per group (leader + workers) and must be between 1 and 64"},
		{"group size 65", func(s map[string]any) { s["groupSize"] = 65 }, "must be between 1 and 64"},
		{"negative replicas", func(s map[string]any) { s["replicas"] = -1 }, "spec.replicas is the number of groups and must be between 0 and 1000"},
		{"replicas over 1000", func(s map[string]any) { s["replicas"] = 1001 }, "spec.replicas is the number of groups and must be between 0 and 1000"},
		{"surge and unavailable both 0", func(s map[string]any) {
			s["rollout"] = map[string]any{"maxSurge": 0, "maxUnavailable": 0}
		}, "spec.rollout.maxSurge and spec.rollout.maxUnavailable cannot both be 0"},
		{"surge 0% and unavailable 0", func(s map[string]any) {
			s["rollout"] = map[string]any{"maxSurge": "0%", "maxUnavailable": 0}
		}, "cannot both be 0"},
		{"unavailable 0% with default surge", func(s map[string]any) {
			s["rollout"] = map[string]any{"maxUnavailable": "0%"}
		}, "cannot both be 0"},
		{"recreate with surge", func(s map[string]any) {
			s["rollout"] = map[string]any{"strategy": "Recreate", "maxSurge": 1}
		}, "spec.rollout.maxSurge must be 0 with strategy Recreate"},
		{"recreate with percent surge", func(s map[string]any) {
			s["rollout"] = map[string]any{"strategy": "Recreate", "maxSurge": "25%"}
		}, "spec.rollout.maxSurge must be 0 with strategy Recreate"},
		{"negative partition", func(s map[string]any) { s["rollout"] = map[string]any{"partition": -1} }, "spec.rollout.partition must be between 0 and 1000"},
		{"surge not a number or percent", func(s map[string]any) { s["rollout"] = map[string]any{"maxSurge": "two"} }, "spec.rollout.maxSurge must be a number of groups between 0 and 1000 or a percentage"},
		{"negative unavailable", func(s map[string]any) { s["rollout"] = map[string]any{"maxUnavailable": -1} }, "spec.rollout.maxUnavailable must be a number of groups between 0 and 1000"},
		{"custom engine without image", func(s map[string]any) { s["engine"] = map[string]any{"type": "custom"} }, "spec.engine.image is required when spec.engine.type is custom"},
		{"unknown engine", func(s map[string]any) { s["engine"] = map[string]any{"type": "tgi"} }, `spec.engine.type: Unsupported value: "tgi"`},
		{"port out of range", func(s map[string]any) { s["engine"] = map[string]any{"port": 70000} }, "spec.engine.port must be a TCP port between 1 and 65535"},
		{"empty restart id", func(s map[string]any) { s["restart"] = map[string]any{"id": ""} }, "spec.restart.id must not be empty"},
		{"a restart id with the role separator", func(s map[string]any) { s["restart"] = map[string]any{"id": "a/role:b"} }, "spec.restart.id must not contain '/role:'"},
		{"negative gpus", func(s map[string]any) { s["resources"] = map[string]any{"gpus": -1} }, "spec.resources.gpus must be a whole number of GPUs per pod between 0 and 64"},
		{"fractional gpus", func(s map[string]any) { s["resources"] = map[string]any{"gpus": 0.5} }, "spec.resources.gpus: Invalid value"},
		{"zero progress deadline", func(s map[string]any) { s["rollout"] = map[string]any{"progressDeadline": "0s"} }, "spec.rollout.progressDeadline must be a positive duration"},
		{"negative progress deadline", func(s map[string]any) { s["rollout"] = map[string]any{"progressDeadline": "-5m"} }, "spec.rollout.progressDeadline must be a positive duration"},
		{"startup timeout not a duration", func(s map[string]any) { s["readiness"] = map[string]any{"startupTimeout": "soon"} }, "spec.readiness.startupTimeout must be a positive duration"},
		{"readiness path without slash", func(s map[string]any) { s["readiness"] = map[string]any{"path": "health"} }, "spec.readiness.path must be an HTTP path starting with /"},
		{"weights from an unknown scheme", func(s map[string]any) { s["weights"] = map[string]any{"source": "ftp://x/y"} }, "spec.weights.source must start with pvc://, hf:// or s3://"},
		{"unknown restart policy", func(s map[string]any) { s["restartPolicy"] = "Always" }, `spec.restartPolicy: Unsupported value: "Always"`},
		{"unknown strategy", func(s map[string]any) { s["rollout"] = map[string]any{"strategy": "BlueGreen"} }, `spec.rollout.strategy: Unsupported value: "BlueGreen"`},
	})
}

func TestRestartCannotBeRemovedOnceSet(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ms := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Name: "restarted", Namespace: ns}, Spec: v1.ModelServingSpec{Model: "m"}}
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatalf("create without restart must be allowed: %v", err)
	}
	ms.Spec.Restart = &v1.RestartSpec{ID: "1"}
	if err := env.Client.Update(ctx, ms); err != nil {
		t.Fatalf("setting restart must be allowed: %v", err)
	}
	ms.Spec.Restart = &v1.RestartSpec{ID: "2"}
	if err := env.Client.Update(ctx, ms); err != nil {
		t.Fatalf("changing restart.id must be allowed: %v", err)
	}
	ms.Spec.Restart = nil
	err := env.Client.Update(ctx, ms)
	if err == nil || !strings.Contains(err.Error(), "spec.restart cannot be removed once set") {
		t.Fatalf("removing restart: got %v, want a refusal saying it cannot be removed", err)
	}
}

func TestScaleSubresourceReadsAndWritesReplicas(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ms := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Name: "scaled", Namespace: ns}, Spec: v1.ModelServingSpec{Model: "m", Replicas: ptr.To[int32](2)}}
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	ms.Status.Replicas = 2
	ms.Status.Selector = v1.LabelName + "=scaled"
	if err := env.Client.Status().Update(ctx, ms); err != nil {
		t.Fatal(err)
	}

	scale := &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(ctx, ms, scale); err != nil {
		t.Fatalf("get scale: %v", err)
	}
	if scale.Spec.Replicas != 2 || scale.Status.Replicas != 2 || scale.Status.Selector != v1.LabelName+"=scaled" {
		t.Fatalf("scale = spec %d, status %d, selector %q; want 2, 2, %s=scaled", scale.Spec.Replicas, scale.Status.Replicas, scale.Status.Selector, v1.LabelName)
	}

	scale.Spec.Replicas = 5
	if err := env.Client.SubResource("scale").Update(ctx, ms, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("update scale: %v", err)
	}
	var got v1.ModelServing
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ms), &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Replicas == nil || *got.Spec.Replicas != 5 {
		t.Fatalf("spec.replicas after scaling to 5 = %v", got.Spec.Replicas)
	}

	scale.Spec.Replicas = 1001
	if err := env.Client.SubResource("scale").Update(ctx, &got, client.WithSubResourceBody(scale)); err == nil ||
		!strings.Contains(err.Error(), "spec.replicas is the number of groups and must be between 0 and 1000") {
		t.Fatalf("scale to 1001: got %v, want the replicas refusal", err)
	}
}

func modelServing(ns, name string, spec map[string]any) *unstructured.Unstructured {
	// Through JSON so the numbers have the types unstructured content allows.
	raw, err := json.Marshal(spec)
	if err != nil {
		panic(err)
	}
	spec = map[string]any{}
	if err := json.Unmarshal(raw, &spec); err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(),
		"kind":       "ModelServing",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       spec,
	}}
	return u
}

// The serving's name must fit every object and label derived from it (see the CEL rules on
// metadata.name); the longest name that does is 47 characters.
func TestNamesThatCannotWorkAreRefused(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ok := []string{strings.Repeat("a", v1.MaxNameLength), "qwen3-8b", "a", "llama-3b", "my-api-server"}
	for _, name := range ok {
		if err := env.Client.Create(ctx, modelServing(ns, name, base())); err != nil {
			t.Errorf("%q (%d characters) refused: %v", name, len(name), err)
		}
	}
	bad := map[string]string{
		strings.Repeat("a", v1.MaxNameLength+1): "metadata.name must be at most 47 characters",
		"Qwen":                                  "metadata.name must be a DNS-1035 label",
		"3b-model":                              "metadata.name must be a DNS-1035 label",
		"qwen.small":                            "metadata.name must be a DNS-1035 label",
		"llama-3":                               "metadata.name must not end in -<number>",
		"qwen-0":                                "metadata.name must not end in -<number>",
		"qwen-api":                              "metadata.name must not end in -api",
	}
	for name, want := range bad {
		err := env.Client.Create(ctx, modelServing(ns, name, base()))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want a refusal saying %q", name, err, want)
		}
	}
	// The rules judge a name once, at creation: an existing serving stays updatable.
	ms := &v1.ModelServing{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, ms); err != nil {
		t.Fatal(err)
	}
	ms.Spec.Replicas = ptr.To[int32](2)
	if err := env.Client.Update(ctx, ms); err != nil {
		t.Errorf("update of a serving: %v", err)
	}
}

// Status values a writer of the status subresource could set beyond what Go decodes are refused too.
func TestStatusCountsAreBounded(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	u := modelServing(ns, "counted", base())
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	for field, val := range map[string]any{"replicas": int64(99999999999), "collisionCount": int64(99999999999), "readyReplicas": int64(-1)} {
		st := map[string]any{field: val}
		u.Object["status"] = st
		err := env.Client.Status().Update(ctx, u)
		if err == nil || !strings.Contains(err.Error(), "status."+field) {
			t.Errorf("status.%s = %v: got %v, want a refusal naming it", field, val, err)
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			t.Fatal(err)
		}
	}
	u.Object["status"] = map[string]any{"groups": []any{map[string]any{"index": int64(1) << 40, "ready": false, "readyPods": 0, "size": 1}}}
	if err := env.Client.Status().Update(ctx, u); err == nil || !strings.Contains(err.Error(), "status.groups[0].index") {
		t.Errorf("status.groups[0].index = 2^40: got %v, want a refusal naming it", err)
	}
}
