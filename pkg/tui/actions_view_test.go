package tui

import (
	"errors"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// canarySnapshot is demo held as a canary: group 1 on the new revision, partition 1.
func canarySnapshot() Snapshot {
	s := demoSnapshot()
	s.Serving.Spec.Rollout.Partition = ptrTo(int32(1))
	s.Serving.Status.UpdateRevision = revNew
	s.Pods = append(fixtures.Group("demo", 0, 2, revOld), fixtures.Group("demo", 1, 2, revNew)...)
	return s
}

func ptrTo[T any](v T) *T { return &v }

// confirm presses keys, then answer, and runs the command the answer returns.
func confirm(t *testing.T, m Model, answer string, keys ...string) (Model, string) {
	t.Helper()
	m, _ = press(t, m, keys...)
	prompt := display(t, m)
	var cmd tea.Cmd
	m, cmd = press(t, m, answer)
	if cmd != nil {
		m = update(t, m, cmd())
	}
	return m, prompt
}

func TestActionsAskFirst(t *testing.T) {
	for _, tc := range []struct {
		name   string
		snap   func() Snapshot
		keys   []string
		prompt string
		call   string
		notice string
	}{
		{"restart the selected group", demoSnapshot, []string{"down", "r"},
			"Restart group 1 of demo (delete its leader pod; the whole group is recreated)? [y/N]",
			"RestartGroup default/demo 1", "group 1 restarting: leader pod deleted"},
		{"restart the serving", demoSnapshot, []string{"R"},
			"Restart every group of demo (new restart id; groups roll by the rollout rules)? [y/N]",
			"Restart default/demo", "restart requested"},
		{"pause", demoSnapshot, []string{"p"},
			"Pause the rollout of demo (groups keep their revision until resumed)? [y/N]",
			"SetPaused default/demo true", "rollout paused"},
		{"resume", func() Snapshot { s := demoSnapshot(); s.Serving.Spec.Rollout.Paused = true; return s }, []string{"p"},
			"Resume the rollout of demo? [y/N]", "SetPaused default/demo false", "rollout resumed"},
		{"promote", canarySnapshot, []string{"P"},
			"Promote the canary of demo (partition 1 → 0: every group moves to 8c1d2e3f4a)? [y/N]",
			"Promote default/demo", "canary promoted"},
		{"abort", canarySnapshot, []string{"A"},
			"Abort: write revision 5f3a9c1b2d back to demo and set partition 0? [y/N]",
			"Abort default/demo", "canary aborted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeActions{}
			m := feed(t, newTestModel(t, "demo", 100, 30, fake), tc.snap())

			// n cancels: nothing is called
			m, prompt := confirm(t, m, "n", tc.keys...)
			mustContain(t, prompt, tc.prompt)
			if calls := fake.Calls(); len(calls) != 0 {
				t.Fatalf("cancelled, yet called %v", calls)
			}
			mustContain(t, display(t, m), "cancelled")
			mustNotContain(t, display(t, m), "[y/N]")

			// y confirms: the action is called once, and the view says so
			m, _ = confirm(t, m, "y", tc.keys[len(tc.keys)-1])
			if calls := fake.Calls(); len(calls) != 1 || calls[0] != tc.call {
				t.Fatalf("calls %v, want [%s]", calls, tc.call)
			}
			mustContain(t, display(t, m), tc.notice)
		})
	}
}

func TestActionErrorsShow(t *testing.T) {
	fake := &fakeActions{err: errors.New(`serving "demo" is forbidden: cannot patch`)}
	m := feed(t, newTestModel(t, "demo", 100, 30, fake), demoSnapshot())
	m, _ = confirm(t, m, "y", "R")
	mustContain(t, display(t, m), `serving "demo" is forbidden: cannot patch`)
}

func TestActionsThatCannotApplySaySo(t *testing.T) {
	fake := &fakeActions{}
	m := feed(t, newTestModel(t, "demo", 100, 30, fake), demoSnapshot())
	m, _ = press(t, m, "P")
	mustContain(t, display(t, m), "no canary to promote: the partition is 0")
	m, _ = press(t, m, "A")
	mustContain(t, display(t, m), "nothing to abort: every group is on revision 5f3a9c1b2d")
	m, _ = press(t, m, "y")
	if calls := fake.Calls(); len(calls) != 0 {
		t.Errorf("called %v", calls)
	}

	// before the serving is known, nothing is asked
	m = newTestModel(t, "demo", 100, 30, fake)
	m, _ = press(t, m, "R", "y")
	if !strings.Contains(display(t, m), "the serving is not loaded yet") || len(fake.Calls()) != 0 {
		t.Errorf("acted on an unknown serving: %v", fake.Calls())
	}
}
