package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

func TestCanarySetsThePartitionAndPromoteOrAbortMoveItBack(t *testing.T) {
	ns := namespace(t, "canary")
	ms := seedServing(t, ns, fixtures.Serving("qwen", ns).Replicas(3).Image("vllm/vllm-openai:v0.11.0"))
	current := recordRevision(t, ms, ms.Spec, 1)
	writeStatus(t, ms, v1.ModelServingStatus{CurrentRevision: current, UpdateRevision: current})

	r := run(t, time.Now(), "-n", ns, "canary", "qwen", "--image", "vllm/vllm-openai:v0.12.0", "--groups", "1")
	expectCode(t, r, 0)
	golden(t, "canary", r.Out)
	got := getServing(t, ns, "qwen")
	if ptr.Deref(got.Spec.Rollout.Partition, -1) != 2 || got.Spec.Engine.Image != "vllm/vllm-openai:v0.12.0" {
		t.Fatalf("canary: partition %v image %s, want 2 and v0.12.0", got.Spec.Rollout.Partition, got.Spec.Engine.Image)
	}

	r = run(t, time.Now(), "-n", ns, "canary", "promote", "qwen")
	expectCode(t, r, 0)
	got = getServing(t, ns, "qwen")
	if ptr.Deref(got.Spec.Rollout.Partition, -1) != 0 || got.Spec.Engine.Image != "vllm/vllm-openai:v0.12.0" {
		t.Fatalf("promote: partition %v image %s, want 0 and the canary's image", got.Spec.Rollout.Partition, got.Spec.Engine.Image)
	}

	r = run(t, time.Now(), "-n", ns, "canary", "qwen", "--model", "Qwen/Qwen3-1.7B", "--groups", "2")
	expectCode(t, r, 0)
	if got = getServing(t, ns, "qwen"); ptr.Deref(got.Spec.Rollout.Partition, -1) != 1 || got.Spec.Model != "Qwen/Qwen3-1.7B" {
		t.Fatalf("second canary: partition %v model %s", got.Spec.Rollout.Partition, got.Spec.Model)
	}
	r = run(t, time.Now(), "-n", ns, "canary", "abort", "qwen")
	expectCode(t, r, 0)
	got = getServing(t, ns, "qwen")
	if ptr.Deref(got.Spec.Rollout.Partition, -1) != 0 || got.Spec.Engine.Image != "vllm/vllm-openai:v0.11.0" || got.Spec.Model != "Qwen/Qwen3-0.6B" {
		t.Fatalf("abort: partition %v image %s model %s, want 0 and the current revision's v0.11.0 / Qwen3-0.6B",
			got.Spec.Rollout.Partition, got.Spec.Engine.Image, got.Spec.Model)
	}
	if *got.Spec.Replicas != 3 {
		t.Errorf("abort changed replicas to %d", *got.Spec.Replicas)
	}
	r = run(t, time.Now(), "-n", ns, "canary", "abort", "qwen")
	expectCode(t, r, 1)
	if !strings.Contains(r.Err, "has no canary to abort") {
		t.Errorf("abort without a canary: %q", r.Err)
	}
}

func TestRestartSetsANewIDAndRestartGroupDeletesItsLeader(t *testing.T) {
	ns := namespace(t, "restart")
	seedServing(t, ns, fixtures.Serving("qwen", ns).Replicas(2).GroupSize(2))
	var pods []*seededPod
	for g := 0; g < 2; g++ {
		for w := 0; w < 2; w++ {
			pods = append(pods, seedPod(t, ns, 0, fixtures.Pod("qwen", g, w, "qwen-r1"), false))
		}
	}
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	r := run(t, now, "-n", ns, "restart", "qwen")
	expectCode(t, r, 0)
	golden(t, "restart", r.Out)
	if ms := getServing(t, ns, "qwen"); ms.Spec.Restart == nil || ms.Spec.Restart.ID != "2026-11-29T10:00:00Z" {
		t.Fatalf("restart id: %+v", ms.Spec.Restart)
	}
	r = run(t, now.Add(time.Minute), "-n", ns, "restart", "qwen")
	expectCode(t, r, 0)
	if ms := getServing(t, ns, "qwen"); ms.Spec.Restart.ID != "2026-11-29T10:01:00Z" {
		t.Fatalf("second restart id: %s", ms.Spec.Restart.ID)
	}

	r = run(t, now, "-n", ns, "restart", "qwen", "--group", "1")
	expectCode(t, r, 0)
	golden(t, "restart-group", r.Out)
	ctx := context.Background()
	for _, p := range pods {
		got := &corev1.Pod{}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(p.pod), got)
		gone := apierrors.IsNotFound(err) || (err == nil && got.DeletionTimestamp != nil)
		if want := p.pod.Name == "qwen-1"; gone != want {
			t.Errorf("pod %s deleted = %v, want %v", p.pod.Name, gone, want)
		}
	}
	r = run(t, now, "-n", ns, "restart", "qwen", "--group", "1")
	expectCode(t, r, 1)
	if !strings.Contains(r.Err, "group 1 of serving \"qwen\" has no running leader pod") {
		t.Errorf("restarting a group whose leader is gone: %q", r.Err)
	}
}
