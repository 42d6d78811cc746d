package tui

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/operator"
)

// TestClientActions checks each action's write against the API server.
func TestClientActions(t *testing.T) {
	env, _, ns := controlPlane(t)
	ctx := context.Background()
	c := env.Client
	a := ClientActions{Client: c, Clock: func() time.Time { return now }}
	key := types.NamespacedName{Namespace: ns, Name: "demo"}
	get := func() *v1.ModelServing {
		t.Helper()
		var ms v1.ModelServing
		if err := c.Get(ctx, key, &ms); err != nil {
			t.Fatal(err)
		}
		return &ms
	}
	if err := c.Create(ctx, apiServing(ns, 2, 2)); err != nil {
		t.Fatal(err)
	}

	t.Run("restart sets a new restart id", func(t *testing.T) {
		if err := a.Restart(ctx, ns, "demo"); err != nil {
			t.Fatal(err)
		}
		if got := get().Spec.Restart; got == nil || got.ID != "2026-11-29T10:05:00Z" {
			t.Fatalf("restart %+v", got)
		}
		if err := a.Restart(ctx, ns, "demo"); err != nil {
			t.Fatal(err)
		}
		if got := get().Spec.Restart.ID; got != "2026-11-29T10:05:00Z-1" {
			t.Errorf("a second restart in the same second: id %s", got)
		}
	})

	t.Run("pause, resume, promote", func(t *testing.T) {
		if err := a.SetPaused(ctx, ns, "demo", true); err != nil {
			t.Fatal(err)
		}
		if !get().Spec.Rollout.Paused {
			t.Error("not paused")
		}
		if err := a.SetPaused(ctx, ns, "demo", false); err != nil {
			t.Fatal(err)
		}
		if get().Spec.Rollout.Paused {
			t.Error("still paused")
		}
		ms := get()
		ms.Spec.Rollout.Partition = ptrTo(int32(1))
		if err := c.Update(ctx, ms); err != nil {
			t.Fatal(err)
		}
		if err := a.Promote(ctx, ns, "demo"); err != nil {
			t.Fatal(err)
		}
		if p := get().Spec.Rollout.Partition; p == nil || *p != 0 {
			t.Errorf("partition %v after promote", p)
		}
	})

	t.Run("restart group deletes only that group's leader", func(t *testing.T) {
		for _, p := range []struct{ g, w int }{{0, 0}, {0, 1}, {1, 0}, {1, 1}} {
			if err := c.Create(ctx, apiPod(ns, p.g, p.w, "demo-abc")); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.RestartGroup(ctx, ns, "demo", 1); err != nil {
			t.Fatal(err)
		}
		for name, wantGone := range map[string]bool{"demo-0": false, "demo-0-1": false, "demo-1": true, "demo-1-1": false} {
			var pod = apiPod(ns, 0, 0, "")
			err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pod)
			gone := apierrors.IsNotFound(err) || (err == nil && pod.DeletionTimestamp != nil)
			if gone != wantGone {
				t.Errorf("pod %s deleted %v, want %v (err %v)", name, gone, wantGone, err)
			}
		}
		err := a.RestartGroup(ctx, ns, "demo", 7)
		if err == nil || !strings.Contains(err.Error(), "group 7 of serving demo has no leader pod") {
			t.Errorf("restart of a group without pods: %v", err)
		}
	})

	t.Run("abort writes the current revision back", func(t *testing.T) {
		ms := get()
		old := operator.RevisionSpecOf(ms.Spec)
		cr, err := operator.NewControllerRevision(ms, old, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
		ms.Status.CurrentRevision, ms.Status.UpdateRevision = cr.Name, "demo-new"
		if err := c.Status().Update(ctx, ms); err != nil {
			t.Fatal(err)
		}
		ms = get()
		ms.Spec.Engine.Image = "vllm/vllm-openai:v0.12.0"
		ms.Spec.Engine.Args = []string{"--enable-prefix-caching"}
		ms.Spec.Rollout.Partition = ptrTo(int32(1))
		if err := c.Update(ctx, ms); err != nil {
			t.Fatal(err)
		}
		if err := a.Abort(ctx, ns, "demo"); err != nil {
			t.Fatal(err)
		}
		got := get()
		if got.Spec.Engine.Image != "vllm/vllm-openai:v0.11.0" || len(got.Spec.Engine.Args) != 0 {
			t.Errorf("engine after abort: %+v", got.Spec.Engine)
		}
		if p := got.Spec.Rollout.Partition; p == nil || *p != 0 {
			t.Errorf("partition %v after abort", p)
		}
		if got.Spec.Restart == nil || *got.Spec.Replicas != 2 {
			t.Errorf("abort touched more than the revision: restart %v replicas %d", got.Spec.Restart, *got.Spec.Replicas)
		}
	})
}

// syncBuffer is a bytes.Buffer safe to read while RunPlain writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunPlainFollowsTheAPIServer: RunPlain prints a line when a pod becomes ready.
func TestRunPlainFollowsTheAPIServer(t *testing.T) {
	env, wc, ns := controlPlane(t)
	c := env.Client
	ctx, cancel := context.WithCancel(context.Background())
	if err := c.Create(ctx, apiServing(ns, 1, 1)); err != nil {
		t.Fatal(err)
	}
	leader := apiPod(ns, 0, 0, "demo-abc")
	if err := c.Create(ctx, leader); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- RunPlain(ctx, Config{Client: wc, Namespace: ns, Name: "demo", Out: &out}) }()
	waitOutput := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(out.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("RunPlain never printed %q:\n%s", want, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitOutput("group 0 leader: Pending (waiting to be scheduled)")
	setPodStatus(t, c, leader, true)
	waitOutput("group 0 leader: Ready")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("RunPlain ended by its context returned %v, want context.Canceled", err)
	}
}
