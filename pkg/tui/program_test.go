package tui

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest/v2"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// TestProgramSmoke runs the view as a program: it opens its stream, draws the serving, opens a
// group on enter and quits on q.
func TestProgramSmoke(t *testing.T) {
	src := &fakeSource{snaps: map[string]Snapshot{"demo": demoSnapshot()}}
	m := newModel(Config{Namespace: "default", Name: "demo", Clock: clock, Actions: &fakeActions{}}, src)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))

	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("Qwen/Qwen3-0.6B")) && bytes.Contains(b, []byte("loading weights"))
	}, teatest.WithDuration(10*time.Second))
	tm.Send(keyMsg("down"))
	tm.Send(keyMsg("enter"))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("GROUP 1")) && bytes.Contains(b, []byte("esc back"))
	}, teatest.WithDuration(10*time.Second))
	tm.Type("q")

	final, ok := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(Model)
	if !ok {
		t.Fatal("the program did not end with the view's model")
	}
	if final.screen != screenPods || final.sv.ms == nil {
		t.Errorf("final model: screen %v, serving loaded %v", final.screen, final.sv.ms != nil)
	}
}

// TestRunEndsWithItsContext: Run ended from outside says so (rollout status --timeout needs it).
func TestRunEndsWithItsContext(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).Build()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var out bytes.Buffer
	err := Run(ctx, Config{Client: c, Namespace: "default", Name: "demo", In: &bytes.Buffer{}, Out: &out, Clock: clock})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run returned %v, want context.DeadlineExceeded", err)
	}
	if !strings.Contains(out.String(), "kubectl llm watch demo") { // the window title: the view ran
		t.Errorf("the program never showed the view:\n%q", out.String())
	}
}
