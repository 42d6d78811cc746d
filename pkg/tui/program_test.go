package tui

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest/v2"
)

// TestProgramSmoke runs the view as a program: it opens its stream, draws the serving, opens a
// group on enter and quits on q.
func TestProgramSmoke(t *testing.T) {
	src := &fakeSource{snaps: map[string]Snapshot{"demo": demoSnapshot()}}
	m := newModel(context.Background(), Config{Namespace: "default", Name: "demo", Clock: clock, Actions: &fakeActions{}}, src)
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
