package tui

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// syncBuffer is a buffer a test may read while a command or view writes to it.
type syncBuffer = testenv.SyncBuffer

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
