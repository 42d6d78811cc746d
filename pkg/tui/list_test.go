package tui

import (
	"bytes"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// run runs a command and the commands it leads to until one waits on a stream or ticks,
// the way the program would, and returns the model.
func step(t *testing.T, m Model, cmd tea.Cmd) (Model, tea.Cmd) {
	t.Helper()
	if cmd == nil {
		t.Fatal("no command")
	}
	msg := cmd()
	if batch, ok := msg.(tea.BatchMsg); ok { // the program runs each; these return at once
		var cmds []tea.Cmd
		for _, c := range batch {
			if msg := c(); msg != nil {
				next, cmd := m.Update(msg)
				m, cmds = next.(Model), append(cmds, cmd)
			}
		}
		return m, tea.Batch(cmds...)
	}
	next, cmd := m.Update(msg)
	return next.(Model), cmd
}

func TestListOpensAServing(t *testing.T) {
	other := created(serving(1, 1).Obj())
	other.Name, other.Spec.Model = "chat", "meta-llama/Llama-3.1-8B"
	other.Status.Phase, other.Status.ReadyGroups = v1.PhaseReady, "1/1"
	demo := demoSnapshot()
	src := &fakeSource{snaps: map[string]Snapshot{
		"":     {Synced: true, Servings: []v1.ModelServing{*other, *demo.Serving}},
		"demo": demo,
	}}
	m := newModel(Config{Namespace: "default", Clock: clock}, src)
	m = update(t, m, tea.WindowSizeMsg{Width: 100, Height: 30})

	// open the list's stream, take its snapshot, redraw
	m, cmd := step(t, m, m.open(""))
	m, _ = step(t, m, cmd)
	m = update(t, m, flushMsg{})
	out := display(t, m)
	mustContain(t, out, "ModelServings  namespace default", "2 servings", "NAME", "MODEL", "PHASE",
		"chat", "meta-llama/Llama-3.1-8B", "Ready", "demo", "Progressing", "1/2")
	if l := lineWith(t, out, "chat"); l[0] != "▸"[0] {
		t.Errorf("the first serving is selected: %q", l)
	}

	// filter to demo, open it
	m, _ = press(t, m, "/", "d", "e", "enter")
	mustNotContain(t, display(t, m), "chat")
	m, cmd = press(t, m, "enter")
	m, cmd = step(t, m, cmd) // opened
	m, _ = step(t, m, cmd)   // its snapshot
	m = update(t, m, flushMsg{})
	out = display(t, m)
	mustContain(t, out, "demo  Qwen/Qwen3-0.6B", "▸ 0 ", "worker 1: not ready")
	if got := src.opened; len(got) != 2 || got[1] != "demo" {
		t.Errorf("opened %v", got)
	}

	// esc goes back to the list, whose stream is still open
	m, cmd = press(t, m, "esc")
	m, _ = step(t, m, cmd)
	m = update(t, m, flushMsg{})
	out = display(t, m)
	mustContain(t, out, "ModelServings", "chat", "demo")
	if len(src.opened) != 2 {
		t.Errorf("went back by reopening the list: %v", src.opened)
	}
	if src.stream("demo").ctx.Err() == nil {
		t.Error("the serving's watches still run after going back to the list")
	}
	if src.stream("").ctx.Err() != nil {
		t.Error("the list's watches stopped")
	}
}

func TestEmptyList(t *testing.T) {
	m := newModel(Config{Namespace: "team-a", Clock: clock}, nil)
	m = update(t, m, tea.WindowSizeMsg{Width: 80, Height: 20})
	m = feed(t, m, Snapshot{Synced: true})
	mustContain(t, display(t, m), "no serving in namespace team-a: create one with kubectl llm deploy")
}

// A serving with roles the operator has not reported yet counts every role's groups, not
// spec.replicas (which stays 1 with roles), in the plain lines and the list screen alike.
func TestListOfARolesServingNotReportedYet(t *testing.T) {
	pd := fixtures.Serving("pd", "default").Roles(2, 6, 2).Obj()
	var out bytes.Buffer
	p := newPlainPrinter(Config{Out: &out, Clock: clock, Namespace: "default"}.withDefaults())
	if _, err := p.print(Snapshot{Synced: true, Servings: []v1.ModelServing{*pd}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "serving pd: Unknown, 0/8 groups ready") {
		t.Errorf("plain line %q, want 0/8 groups ready", out.String())
	}
	m := newModel(Config{Namespace: "default", Clock: clock}, &fakeSource{snaps: map[string]Snapshot{"": {Synced: true, Servings: []v1.ModelServing{*pd}}}})
	m = update(t, m, tea.WindowSizeMsg{Width: 100, Height: 30})
	m, cmd := step(t, m, m.open(""))
	m, _ = step(t, m, cmd)
	m = update(t, m, flushMsg{})
	if l := lineWith(t, display(t, m), "pd"); !strings.Contains(l, "0/8") {
		t.Errorf("list line %q, want 0/8", l)
	}
}
