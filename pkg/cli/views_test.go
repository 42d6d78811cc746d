package cli_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// seedGetServings creates three servings in three states: ready, rolling, never reconciled.
func seedGetServings(t *testing.T, ns string) time.Time {
	t.Helper()
	ready := seedServing(t, ns, fixtures.Serving("qwen", ns).Replicas(2).GroupSize(2).GPUs(1))
	rolling := seedServing(t, ns, fixtures.Serving("llama", ns).Model("meta-llama/Llama-3.1-70B-Instruct").Engine(v1.EngineSGLang).Replicas(4).GroupSize(4).GPUs(8))
	fresh := seedServing(t, ns, fixtures.Serving("fresh", ns).Model("Qwen/Qwen3-8B"))
	now := clockAfter(t, ready, rolling, fresh)
	at := now.Add(-10 * time.Minute)
	writeStatus(t, ready, v1.ModelServingStatus{Phase: v1.PhaseReady, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, ReadyGroups: "2/2",
		UpdateRevision: "qwen-5f8c7d9b1a", CurrentRevision: "qwen-5f8c7d9b1a", Endpoint: naming.Endpoint(ready),
		Conditions: conditions(at, [3]string{"True", v1.ReasonGroupsAvailable, ""}, [3]string{"True", v1.ReasonRolloutComplete, ""}, [3]string{"False", v1.ReasonAsExpected, ""})})
	writeStatus(t, rolling, v1.ModelServingStatus{Phase: v1.PhaseProgressing, Replicas: 4, ReadyReplicas: 3, UpdatedReplicas: 1, ReadyGroups: "3/4",
		UpdateRevision: "llama-0a1b2c3d4e", CurrentRevision: "llama-9f8e7d6c5b", Endpoint: naming.Endpoint(rolling),
		Conditions: conditions(at, [3]string{"True", v1.ReasonGroupsAvailable, ""}, [3]string{"True", v1.ReasonRollingOut, ""}, [3]string{"False", v1.ReasonAsExpected, ""})})
	return now
}

func TestGetGolden(t *testing.T) {
	ns := namespace(t, "golden-get")
	now := seedGetServings(t, ns)
	for _, tc := range []struct{ name, golden string }{
		{"table", "get"}, {"wide", "get-wide"},
	} {
		r := run(t, now, "-n", ns, "get", "-o", tc.name)
		expectCode(t, r, 0)
		golden(t, tc.golden, r.Out)
	}
	r := run(t, now, "-n", ns, "get", "llama", "-o", "wide")
	expectCode(t, r, 0)
	golden(t, "get-one-wide", r.Out)

	r = run(t, now, "get", "-A")
	expectCode(t, r, 0)
	if !strings.HasPrefix(r.Out, "NAMESPACE") || !strings.Contains(r.Out, ns) {
		t.Errorf("get -A has no NAMESPACE column or lacks %s:\n%s", ns, r.Out)
	}
	r = run(t, now, "-n", ns, "get", "-o", "yaml")
	expectCode(t, r, 0)
	if !strings.HasPrefix(r.Out, "apiVersion: v1\nitems:\n- apiVersion: serving.kubectl-llm.dev/v1alpha1\n  kind: ModelServing") || strings.Count(r.Out, "kind: ModelServing") != 3 {
		t.Errorf("get -o yaml is not a List of the 3 servings:\n%s", r.Out)
	}
	// kubectl's other formats come with cli-runtime's printers: a jsonpath sees one serving, or a
	// List's items.
	r = run(t, now, "-n", ns, "get", "qwen", "-o", "jsonpath={.spec.model}")
	expectCode(t, r, 0)
	if r.Out != "Qwen/Qwen3-0.6B" {
		t.Errorf("get qwen -o jsonpath printed %q", r.Out)
	}
	r = run(t, now, "-n", ns, "get", "-o", "jsonpath={.items[*].metadata.name}")
	expectCode(t, r, 0)
	if r.Out != "fresh llama qwen" {
		t.Errorf("get -o jsonpath of the list printed %q", r.Out)
	}
	r = run(t, now, "-n", ns, "scale", "fresh", "--replicas", "1", "--template", "{{.spec.replicas}}")
	expectCode(t, r, 0)
	if r.Out != "1" {
		t.Errorf("scale --template printed %q", r.Out)
	}
	empty := namespace(t, "golden-get-empty")
	r = run(t, now, "-n", empty, "get")
	expectCode(t, r, 0)
	if r.Out != "" || r.Err != "No servings found in golden-get-empty namespace.\n" {
		t.Errorf("empty namespace: out %q err %q", r.Out, r.Err)
	}
}

// TestDescribeGolden shows every kind of unready pod the views must explain.
func TestDescribeGolden(t *testing.T) {
	ns := namespace(t, "golden-describe")
	gpuMsg := "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod."
	b := fixtures.Serving("qwen", ns).Replicas(3).GroupSize(2).GPUs(1).Image("vllm/vllm-openai:v0.12.0").
		Surge(intstr.FromInt32(1), intstr.FromInt32(0))
	ms := seedServing(t, ns, b)
	oldSpec := ms.Spec.DeepCopy()
	oldSpec.Engine.Image = "vllm/vllm-openai:v0.11.0"
	r1 := recordRevision(t, ms, *oldSpec, 1)
	r2 := recordRevision(t, ms, ms.Spec, 2)

	pods := []*seededPod{
		seedPod(t, ns, 1, fixtures.Pod("qwen", 0, 0, r1), false),
		seedPod(t, ns, 1, fixtures.Pod("qwen", 0, 1, r1), true), // deleted below, held by a finalizer
		seedPod(t, ns, 1, fixtures.Pod("qwen", 1, 0, r1).Waiting("CrashLoopBackOff", "back-off 5m0s restarting failed container", 7, 1), false),
		seedPod(t, ns, 1, fixtures.Pod("qwen", 1, 1, r1).OOMKilled(2), false),
		seedPod(t, ns, 1, fixtures.Pod("qwen", 2, 0, r2).NotReady(), false),
		seedPod(t, ns, 1, fixtures.Pod("qwen", 2, 1, r2).Waiting("ImagePullBackOff", `Back-off pulling image "vllm/vllm-openai:v0.12.0"`, 0, 0), false),
		seedPod(t, ns, 1, fixtures.Pod("qwen", 3, 0, r2).Unschedulable(gpuMsg), false),
	}
	if err := env.Client.Delete(t.Context(), pods[1].pod); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{ms}
	for _, p := range pods {
		objs = append(objs, p.pod)
	}
	now := clockAfter(t, objs...)
	for _, p := range pods {
		p.writeStatus(t, now, 5*time.Minute)
	}
	at := now.Add(-12 * time.Minute)
	writeStatus(t, ms, v1.ModelServingStatus{
		Phase: v1.PhaseDegraded, Replicas: 4, ReadyReplicas: 0, UpdatedReplicas: 1, ReadyGroups: "0/3",
		CurrentRevision: r1, UpdateRevision: r2, Endpoint: naming.Endpoint(ms),
		Conditions: conditions(at,
			[3]string{"False", v1.ReasonGroupsUnavailable, "0 of 3 groups ready, fewer than the 3 required"},
			[3]string{"True", v1.ReasonRollingOut, "1 of 3 groups updated, 0 of 3 ready, 1 surge group(s)"},
			[3]string{"True", v1.ReasonInsufficientGPU, "group 3 leader cannot be scheduled: Insufficient nvidia.com/gpu; free GPUs or lower spec.rollout.maxSurge"}),
	})
	event(t, ns, "qwen.rollout", "ModelServing", "qwen", "Normal", "RolloutStarted", "rolling out revision "+r2+" (was "+r1+")", 1, now.Add(-12*time.Minute), now.Add(-12*time.Minute))
	event(t, ns, "qwen-3.sched", "Pod", "qwen-3", "Warning", "FailedScheduling", gpuMsg, 4, now.Add(-11*time.Minute), now.Add(-2*time.Minute))
	event(t, ns, "qwen-1.backoff", "Pod", "qwen-1", "Warning", "BackOff", "Back-off restarting failed container engine in pod qwen-1", 12, now.Add(-40*time.Minute), now.Add(-1*time.Minute))
	event(t, ns, "other.event", "Pod", "someone-else", "Warning", "BackOff", "not about this serving", 1, now, now)

	r := run(t, now, "-n", ns, "describe", "qwen")
	expectCode(t, r, 0)
	golden(t, "describe", r.Out)
	if r2 := run(t, now, "-n", ns, "inspect", "qwen"); r2.Out != r.Out {
		t.Errorf("inspect differs from describe")
	}
	for _, want := range []string{"Insufficient nvidia.com/gpu", "CrashLoopBackOff: container engine restarted 7 times, last exit 1", "OOMKilled",
		"ImagePullBackOff", "loading weights / starting for 5m0s", "Terminating for 1h0m0s"} {
		if !strings.Contains(r.Out, want) {
			t.Errorf("describe does not say %q", want)
		}
	}
	if strings.Contains(r.Out, "not about this serving") {
		t.Error("describe shows an event of another object")
	}
}

func TestDescribeAServingTheOperatorHasNotSeen(t *testing.T) {
	ns := namespace(t, "golden-describe-new")
	ms := seedServing(t, ns, fixtures.Serving("fresh", ns).Replicas(1))
	now := clockAfter(t, ms)
	r := run(t, now, "-n", ns, "describe", "fresh")
	expectCode(t, r, 0)
	golden(t, "describe-new", r.Out)
}
