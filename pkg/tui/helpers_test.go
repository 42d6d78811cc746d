package tui

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// now is the fixed clock of the tests: five minutes after the fixtures' pods were created.
var now = time.Date(2026, 11, 29, 10, 5, 0, 0, time.UTC)

func clock() time.Time { return now }

const (
	revOld = "demo-5f3a9c1b2d"
	revNew = "demo-8c1d2e3f4a"
)

// fakeActions records the actions the view carries out.
type fakeActions struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (f *fakeActions) record(s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
	return f.err
}
func (f *fakeActions) RestartGroup(_ context.Context, ns, name string, g int) error {
	return f.record(fmt.Sprintf("RestartGroup %s/%s %d", ns, name, g))
}
func (f *fakeActions) Restart(_ context.Context, ns, name string) error {
	return f.record("Restart " + ns + "/" + name)
}
func (f *fakeActions) SetPaused(_ context.Context, ns, name string, paused bool) error {
	return f.record(fmt.Sprintf("SetPaused %s/%s %v", ns, name, paused))
}
func (f *fakeActions) Promote(_ context.Context, ns, name string) error {
	return f.record("Promote " + ns + "/" + name)
}
func (f *fakeActions) Abort(_ context.Context, ns, name string) error {
	return f.record("Abort " + ns + "/" + name)
}
func (f *fakeActions) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// fakeSource serves fixed snapshots by serving name ("" is the list).
type fakeSource struct {
	mu      sync.Mutex
	snaps   map[string]Snapshot
	opened  []string
	streams map[string]*stream // the last opened, by name
}

func (f *fakeSource) open(_ string, name string) *stream {
	f.mu.Lock()
	f.opened = append(f.opened, name)
	f.mu.Unlock()
	st := newStream(context.Background(), func() Snapshot {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.snaps[name]
	})
	st.changed()
	f.mu.Lock()
	if f.streams == nil {
		f.streams = map[string]*stream{}
	}
	f.streams[name] = st
	f.mu.Unlock()
	return st
}

func (f *fakeSource) stream(name string) *stream {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.streams[name]
}

// newTestModel is the view of serving name (the list when "") at a fixed size and clock.
func newTestModel(t testing.TB, name string, w, h int, actions Actions) Model {
	t.Helper()
	m := newModel(Config{Namespace: "default", Name: name, Clock: clock, Actions: actions}, nil)
	return update(t, m, tea.WindowSizeMsg{Width: w, Height: h})
}

func update(t testing.TB, m Model, msg tea.Msg) Model {
	t.Helper()
	next, _ := m.Update(msg)
	return next.(Model)
}

// feed delivers a snapshot the way a stream does: a message, then the redraw tick.
func feed(t testing.TB, m Model, s Snapshot) Model {
	t.Helper()
	if m.stream == nil {
		m.stream = newStream(context.Background(), func() Snapshot { return s })
	}
	next, cmd := m.Update(snapshotMsg{stream: m.stream.id, snap: s})
	if cmd == nil && !next.(Model).flushing {
		t.Fatal("a snapshot scheduled no redraw")
	}
	return update(t, next.(Model), flushMsg{})
}

// press types keys: "enter", "up", "esc" or runes.
func press(t testing.TB, m Model, keys ...string) (Model, tea.Cmd) {
	t.Helper()
	var cmd tea.Cmd
	for _, k := range keys {
		var next tea.Model
		next, cmd = m.Update(keyMsg(k))
		m = next.(Model)
	}
	return m, cmd
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "end":
		return tea.KeyPressMsg{Code: tea.KeyEnd}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

// display is the view as a person without colour sees it: rendered through a no-colour profile.
func display(t testing.TB, m Model) string {
	t.Helper()
	var buf bytes.Buffer
	w := &colorprofile.Writer{Forward: &buf, Profile: colorprofile.NoTTY}
	if _, err := w.Write([]byte(m.View().Content)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "\x1b") {
		t.Fatalf("escape sequences left after the no-colour profile: %q", out)
	}
	checkFits(t, m, out)
	return out
}

// checkFits fails when the screen is larger than the window.
func checkFits(t testing.TB, m Model, out string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) > m.height {
		t.Errorf("%d lines on a %d-line window:\n%s", len(lines), m.height, out)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > m.width {
			t.Errorf("line %d is %d wide on a %d-column window: %q", i, w, m.width, l)
		}
	}
}

// lineWith is the first line of out that contains s.
func lineWith(t testing.TB, out, s string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	t.Fatalf("no line contains %q in:\n%s", s, out)
	return ""
}

// lineIndex is the index of the first line of out that contains s, or -1.
func lineIndex(out, s string) int {
	for i, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return i
		}
	}
	return -1
}

func mustContain(t testing.TB, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("the screen lacks %q:\n%s", w, out)
		}
	}
}

func mustNotContain(t testing.TB, out string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(out, w) {
			t.Errorf("the screen shows %q:\n%s", w, out)
		}
	}
}

// serving is a stored serving as the operator reports it: revision rev everywhere.
func serving(replicas, size int32) *fixtures.ServingBuilder {
	b := fixtures.Serving("demo", "default").Replicas(replicas).GroupSize(size).GPUs(1).Image("vllm/vllm-openai:v0.11.0")
	return b.Status(v1.ModelServingStatus{
		ObservedGeneration: 1, Phase: v1.PhaseProgressing, CurrentRevision: revOld, UpdateRevision: revOld,
		Endpoint: "demo-api.default.svc:8000",
		Conditions: []metav1.Condition{{Type: v1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: v1.ReasonScaling,
			Message: "scaling"}},
	})
}

func created(ms *v1.ModelServing) *v1.ModelServing {
	ms.CreationTimestamp = metav1.NewTime(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	return ms
}

func pods(ps ...corev1.Pod) []corev1.Pod { return ps }

func event(reason, msg string, at time.Time, typ string) corev1.Event {
	return corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "demo." + reason, UID: types.UID("uid-demo." + reason)},
		Type: typ, Reason: reason, Message: msg, LastTimestamp: metav1.NewTime(at), Count: 1}
}

// demoSnapshot is the demo serving: 2 groups of 2 pods, group 1's worker still loading its weights.
func demoSnapshot() Snapshot {
	ms := created(serving(2, 2).Obj())
	ms.Status.ReadyGroups, ms.Status.Replicas, ms.Status.ReadyReplicas, ms.Status.UpdatedReplicas = "1/2", 2, 1, 2
	return Snapshot{
		Serving: ms, Synced: true,
		Pods: pods(
			fixtures.Pod("demo", 0, 0, revOld).Obj(), fixtures.Pod("demo", 0, 1, revOld).Obj(),
			fixtures.Pod("demo", 1, 0, revOld).Obj(), fixtures.Pod("demo", 1, 1, revOld).NotReady().Obj(),
		),
		Events: []corev1.Event{
			event("Scaled", "desired groups now 2", time.Date(2026, 11, 29, 10, 0, 1, 0, time.UTC), corev1.EventTypeNormal),
			event("GroupReady", "group 0 ready", time.Date(2026, 11, 29, 10, 3, 12, 0, time.UTC), corev1.EventTypeNormal),
		},
	}
}
