package tui

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

func TestPlainLinesSayWhatChanged(t *testing.T) {
	var out bytes.Buffer
	tick := now
	p := newPlainPrinter(Config{Out: &out, Clock: func() time.Time { return tick }, Namespace: "default", Name: "demo"}.withDefaults())
	step := func(s Snapshot) string {
		t.Helper()
		out.Reset()
		if _, err := p.print(s); err != nil {
			t.Fatal(err)
		}
		tick = tick.Add(time.Second)
		return out.String()
	}

	got := step(Snapshot{Synced: true})
	if want := "10:05:00 serving demo not found in namespace default: waiting for it\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}

	s := demoSnapshot()
	got = step(s)
	for _, want := range []string{
		"10:05:01 serving demo: Progressing, 1/2 groups ready, 2/2 updated, revision 5f3a9c1b2d\n",
		"10:05:01 group 0 leader: Ready\n", "10:05:01 group 0 worker 1: Ready\n", "10:05:01 group 1 leader: Ready\n",
		"10:05:01 group 1 worker 1: Loading (not ready: loading weights / starting for 5m1s)\n",
		"10:05:01 event Normal Scaled: desired groups now 2\n", "10:05:01 event Normal GroupReady: group 0 ready\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}

	// the same state a second later prints nothing, though the loading time grew
	if got = step(s); got != "" {
		t.Errorf("nothing changed, yet printed:\n%s", got)
	}

	// the worker becomes ready: one line, and the serving's counts
	s.Pods[3] = fixtures.Pod("demo", 1, 1, revOld).Obj()
	s.Serving.Status.Phase, s.Serving.Status.ReadyReplicas = v1.PhaseReady, 2
	got = step(s)
	want := "10:05:03 serving demo: Ready, 2/2 groups ready, 2/2 updated, revision 5f3a9c1b2d\n" +
		"10:05:03 serving demo: Waiting for rollout to finish: 2 of 2 groups ready, waiting for the operator to confirm...\n" +
		"10:05:03 group 1 worker 1: Ready\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}

	// a group goes away; a watch error prints once
	s.Pods = fixtures.Group("demo", 0, 2, revOld)
	s.Serving.Spec.Replicas = ptrTo(int32(1))
	s.Err = errors.New("connection refused")
	got = step(s)
	for _, want := range []string{"watch error: connection refused (retrying)", "group 1 leader: gone", "group 1 worker 1: gone"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	// it comes back, a worker cannot be scheduled: its reason is printed
	s.Serving.Spec.Replicas = ptrTo(int32(2))
	s.Pods = append(s.Pods, fixtures.Pod("demo", 1, 0, revOld).Obj(),
		fixtures.Pod("demo", 1, 1, revOld).Unschedulable("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.").Obj())
	got = step(s)
	if !strings.Contains(got, "group 1 worker 1: Pending (FailedScheduling: Insufficient nvidia.com/gpu") || strings.Contains(got, "watch error") {
		t.Errorf("got:\n%s", got)
	}
}

func TestPlainList(t *testing.T) {
	var out bytes.Buffer
	p := newPlainPrinter(Config{Out: &out, Clock: clock, Namespace: "default"}.withDefaults())
	demo := demoSnapshot().Serving
	if _, err := p.print(Snapshot{Synced: true, Servings: []v1.ModelServing{*demo}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.print(Snapshot{Synced: true}); err != nil {
		t.Fatal(err)
	}
	want := "10:05:00 serving demo: Progressing, 1/2 groups ready, 2 updated, model Qwen/Qwen3-0.6B\n" +
		"10:05:00 serving demo: deleted\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestRunPlainUntilDone(t *testing.T) {
	s := demoSnapshot()
	s.Serving.Status.Conditions[0].Reason = v1.ReasonRolloutComplete
	s.Pods[3] = fixtures.Pod("demo", 1, 1, revOld).Obj()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := runPlain(ctx, Config{Out: &out, Clock: clock, Namespace: "default", Name: "demo", UntilDone: true}.withDefaults(),
		&fakeSource{snaps: map[string]Snapshot{"demo": s}})
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("RunPlain did not return when the rollout was done")
	}
	mustContain(t, out.String(), `serving "demo" successfully rolled out`)
	_ = corev1.EventTypeNormal
}
