package tui

import (
	"slices"
	"testing"
)

// TestEarlierCopiesOfTheModelKeepTheirRows: the model is a value; filtering a copy leaves the rows
// of the copy it came from as they were (no backing array shared between copies).
func TestEarlierCopiesOfTheModelKeepTheirRows(t *testing.T) {
	before := feed(t, newTestModel(t, "demo", 100, 30, nil), demoSnapshot())
	rows := slices.Clone(before.rows)
	if len(rows) < 2 {
		t.Fatalf("the demo serving shows %d group rows, want at least 2", len(rows))
	}
	after, _ := press(t, before, "/", "g", "1")
	if len(after.rows) >= len(rows) {
		t.Fatalf("the filter kept %v of %v", after.rows, rows)
	}
	if !slices.Equal(before.rows, rows) {
		t.Errorf("filtering a copy changed the earlier copy's rows: %v, were %v", before.rows, rows)
	}
}

// TestUpdateLeavesStreamsToCommands: moving back from a serving to the list stops the serving's
// watches in a Cmd, not in Update itself.
func TestUpdateLeavesStreamsToCommands(t *testing.T) {
	src := &fakeSource{snaps: map[string]Snapshot{"": {Synced: true}, "demo": demoSnapshot()}}
	m := newModel(Config{Namespace: "default", Clock: clock}, src)
	m, cmd := step(t, m, m.open(""))
	m, _ = step(t, m, cmd)
	m.name, m.fromList = "demo", true
	m, cmd = step(t, m, m.open("demo"))
	serving := src.stream("demo")
	m, cmd = press(t, m, "esc")
	if serving.ctx.Err() != nil {
		t.Fatal("Update stopped the serving's watches itself")
	}
	if cmd == nil {
		t.Fatal("going back returned no command")
	}
	step(t, m, cmd)
	if serving.ctx.Err() == nil {
		t.Error("the command of going back did not stop the serving's watches")
	}
}
