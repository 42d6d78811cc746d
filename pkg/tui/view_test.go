package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// TestDemoServing is the screen of the demo serving (docs/live-view.md shows it).
func TestDemoServing(t *testing.T) {
	m := feed(t, newTestModel(t, "demo", 100, 30, nil), demoSnapshot())
	out := display(t, m)
	golden.RequireEqual(t, out)

	mustContain(t, out, "demo  Qwen/Qwen3-0.6B", "Progressing", "age 5m", "image vllm/vllm-openai:v0.11.0",
		"revision 5f3a9c1b2d", "endpoint demo-api.default.svc:8000", "2/2 updated · 1/2 ready · 2 desired",
		"GroupReady", "group 0 ready", "10:03:12", "? help", "q quit")
	if l := lineWith(t, out, "▸ 0 "); !strings.Contains(l, "● ●") || !strings.Contains(l, "2/2") {
		t.Errorf("group 0 should show two ready pods: %q", l)
	}
	l := lineWith(t, out, "  1 ")
	for _, want := range []string{"● ◐", "1/2", "worker 1: not ready: loading weights / starting for 5m0s"} {
		if !strings.Contains(l, want) {
			t.Errorf("group 1 should show %q: %q", want, l)
		}
	}
}

func TestGroupsComingUp(t *testing.T) {
	ms := created(serving(2, 2).Obj())
	m := newTestModel(t, "demo", 100, 30, nil)
	out := display(t, m)
	mustContain(t, out, "watching serving demo in namespace default")

	m = feed(t, m, Snapshot{Serving: ms, Synced: true})
	out = display(t, m)
	if l := lineWith(t, out, "▸ 0 "); !strings.Contains(l, "· ·") || !strings.Contains(l, "0/2") || !strings.Contains(l, "leader: not created yet") {
		t.Errorf("a group without pods shows two missing cells: %q", l)
	}
	mustContain(t, out, "0/2 ready")

	m = feed(t, m, Snapshot{Serving: ms, Synced: true, Pods: pods(
		fixtures.Pod("demo", 0, 0, revOld).NotReady().Obj(),
		fixtures.Pod("demo", 1, 0, revOld).Unschedulable("").Obj(),
	)})
	out = display(t, m)
	if l := lineWith(t, out, "▸ 0 "); !strings.Contains(l, "◐ ·") || !strings.Contains(l, "leader: not ready: loading weights") {
		t.Errorf("group 0: leader loading, worker not created: %q", l)
	}
	if l := lineWith(t, out, "  1 "); !strings.Contains(l, "○ ·") || !strings.Contains(l, "leader: FailedScheduling") {
		t.Errorf("group 1: leader pending: %q", l)
	}

	m = feed(t, m, Snapshot{Serving: ms, Synced: true, Pods: append(fixtures.Group("demo", 0, 2, revOld), fixtures.Group("demo", 1, 2, revOld)...)})
	out = display(t, m)
	for _, g := range []string{"▸ 0 ", "  1 "} {
		if l := lineWith(t, out, g); !strings.Contains(l, "● ●") || !strings.Contains(l, "2/2") {
			t.Errorf("every pod ready: %q", l)
		}
	}
	mustContain(t, out, "2/2 ready")
	mustNotContain(t, out, "not created", "loading")
}

func TestPodFailingWithReason(t *testing.T) {
	ms := created(serving(2, 2).Obj())
	ms.Status.Replicas, ms.Status.ReadyReplicas, ms.Status.UpdatedReplicas = 2, 1, 2
	msg := "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod."
	s := Snapshot{Serving: ms, Synced: true, Pods: pods(
		fixtures.Pod("demo", 0, 0, revOld).Obj(), fixtures.Pod("demo", 0, 1, revOld).Obj(),
		fixtures.Pod("demo", 1, 0, revOld).Obj(), fixtures.Pod("demo", 1, 1, revOld).Unschedulable(msg).Obj(),
	)}
	m := feed(t, newTestModel(t, "demo", 100, 30, nil), s)
	out := display(t, m)
	l := lineWith(t, out, "  1 ")
	for _, want := range []string{"● ○", "1/2", "worker 1: FailedScheduling: Insufficient nvidia.com/gpu", "…"} {
		if !strings.Contains(l, want) {
			t.Errorf("group 1 row lacks %q: %q", want, l)
		}
	}

	// enter on group 1 shows its pods with the whole reason
	m, _ = press(t, m, "down", "enter")
	out = display(t, m)
	golden.RequireEqual(t, out)
	mustContain(t, out, "GROUP 1 · revision 5f3a9c1b2d · 1/2 ready", "esc back", "leader", "demo-1", "gpu-node-1",
		"worker 1", "Pending", "No preemption victims found")
	mustNotContain(t, out, "EVENTS")
	if l := lineWith(t, out, "worker 1"); !strings.HasPrefix(l, "○ worker 1") {
		t.Errorf("the worker's line starts with its state symbol: %q", l)
	}

	// a crash-looping pod: ✗ and its restarts
	s.Pods[3] = fixtures.Pod("demo", 1, 1, revOld).Waiting("CrashLoopBackOff", "back-off 5m0s", 7, 1).Obj()
	m = feed(t, m, s)
	out = display(t, m)
	mustContain(t, out, "✗ worker 1", "Failing", "CrashLoopBackOff: container engine restarted 7 times, last exit 1")

	m, _ = press(t, m, "esc")
	out = display(t, m)
	if l := lineWith(t, out, "▸ 1 "); !strings.Contains(l, "● ✗") {
		t.Errorf("back on the grid, group 1 still selected and failing: %q", l)
	}
}

func TestRollingUpdateWithPartition(t *testing.T) {
	ms := created(serving(4, 2).Partition(2).Obj())
	ms.Status.UpdateRevision = revNew
	ms.Status.Replicas, ms.Status.ReadyReplicas, ms.Status.UpdatedReplicas = 4, 3, 2
	ms.Status.Conditions[0].Reason, ms.Status.Conditions[0].Message = v1.ReasonRollingOut, "2 of 4 groups updated, 3 of 4 ready"
	ps := append(fixtures.Group("demo", 0, 2, revOld), fixtures.Group("demo", 1, 2, revOld)...)
	ps = append(ps, fixtures.Group("demo", 2, 2, revNew)...)
	ps = append(ps, fixtures.Pod("demo", 3, 0, revNew).Obj(), fixtures.Pod("demo", 3, 1, revNew).NotReady().Obj())
	m := feed(t, newTestModel(t, "demo", 100, 30, nil), Snapshot{Serving: ms, Synced: true, Pods: ps})
	out := display(t, m)
	golden.RequireEqual(t, out)

	mustContain(t, out, "revision 5f3a9c1b2d → 8c1d2e3f4a", "2/4 updated · 3/4 ready · 4 desired · partition 2",
		"[#####-----]", "Waiting for rollout to finish: 2 of 4 groups updated")
	marker := lineIndex(out, "── partition 2: groups ≥ 2 move to 8c1d2e3f4a, groups < 2 stay on 5f3a9c1b2d")
	g1, g2 := lineIndex(out, "  1   "), lineIndex(out, "  2   ")
	if marker < 0 || !(g1 < marker && marker < g2) {
		t.Errorf("the partition line (%d) belongs between group 1 (%d) and group 2 (%d):\n%s", marker, g1, g2, out)
	}
	if l := lineWith(t, out, "▸ 0 "); !strings.Contains(l, "5f3a9c1b2d old") {
		t.Errorf("group 0 stays on the old revision: %q", l)
	}
	if l := lineWith(t, out, "  3 "); !strings.Contains(l, "8c1d2e3f4a new") || !strings.Contains(l, "worker 1: not ready") {
		t.Errorf("group 3 runs the new revision and loads: %q", l)
	}

	// the marker does not take a cursor position: down from group 1 lands on group 2
	m, _ = press(t, m, "down", "down")
	if g, _ := m.selectedGroup(); g.Index != 2 {
		t.Errorf("selected group %d, want 2", g.Index)
	}
}

func TestSurgeGroup(t *testing.T) {
	ms := created(serving(2, 2).Surge(intstr.FromInt32(1), intstr.FromInt32(0)).Obj())
	ms.Status.UpdateRevision = revNew
	ps := append(fixtures.Group("demo", 0, 2, revOld), fixtures.Group("demo", 1, 2, revOld)...)
	ps = append(ps, fixtures.Pod("demo", 2, 0, revNew).NotReady().Obj(), fixtures.Pod("demo", 2, 1, revNew).Unschedulable("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.").Obj())
	m := feed(t, newTestModel(t, "demo", 100, 30, nil), Snapshot{Serving: ms, Synced: true, Pods: ps})
	out := display(t, m)
	mustContain(t, out, "0/2 updated · 2/2 ready · 2 desired · 1 surge", "maxSurge 1, maxUnavailable 0")
	l := lineWith(t, out, "2 surge")
	for _, want := range []string{"◐ ○", "8c1d2e3f4a new", "0/2", "leader: not ready"} {
		if !strings.Contains(l, want) {
			t.Errorf("the surge group row lacks %q: %q", want, l)
		}
	}
}

// bigServing is a serving of n groups of size pods, every pod ready but one loading per 10 groups.
func bigServing(n, size int) Snapshot {
	ms := created(serving(int32(n), int32(size)).Obj())
	var ps []corev1.Pod
	for g := 0; g < n; g++ {
		for w := 0; w < size; w++ {
			b := fixtures.Pod("demo", g, w, revOld)
			if g%10 == 3 && w == size-1 {
				b.NotReady()
			}
			ps = append(ps, b.Obj())
		}
	}
	return Snapshot{Serving: ms, Synced: true, Pods: ps}
}

func TestLongListScrollsAndResize(t *testing.T) {
	m := feed(t, newTestModel(t, "demo", 100, 30, nil), bigServing(128, 8))
	out := display(t, m)
	mustContain(t, out, "lines 1–21 of 128", "▸ 0 ", "● ● ● ● ● ● ● ●")
	mustNotContain(t, out, "  127 ")

	m, _ = press(t, m, "G")
	out = display(t, m)
	mustContain(t, out, "▸ 127", "lines 108–128 of 128")
	mustNotContain(t, out, "  0   ")

	// a wider, taller window shows more groups; the cursor stays on group 127
	m = update(t, m, tea.WindowSizeMsg{Width: 160, Height: 50})
	out = display(t, m)
	mustContain(t, out, "▸ 127", "lines 88–128 of 128")

	// the smallest window still draws; one smaller says so
	m = update(t, m, tea.WindowSizeMsg{Width: minWidth, Height: minHeight})
	out = display(t, m)
	mustContain(t, out, "▸ 127")
	mustNotContain(t, out, "too small")
	m = update(t, m, tea.WindowSizeMsg{Width: 40, Height: 10})
	out = display(t, m)
	mustContain(t, strings.ReplaceAll(out, "\n", " "), "The window is too small (40×10): the live view needs at least 60×12.")
	m = update(t, m, tea.WindowSizeMsg{Width: 100, Height: 30})
	mustContain(t, display(t, m), "▸ 127", "lines 108–128 of 128")

	// up from the bottom, page up, top
	m, _ = press(t, m, "up", "g")
	mustContain(t, display(t, m), "▸ 0 ", "lines 1–21 of 128")
}

func TestResizeShrinksEventsBeforeGroups(t *testing.T) {
	s := demoSnapshot()
	for i := 0; i < 8; i++ {
		s.Events = append(s.Events, event(fmt.Sprintf("E%d", i), "event", time.Date(2026, 11, 29, 10, 4, i, 0, time.UTC), corev1.EventTypeWarning))
	}
	m := feed(t, newTestModel(t, "demo", 100, 30, nil), s)
	out := display(t, m)
	mustContain(t, out, "EVENTS", "E7", "E3")
	mustNotContain(t, out, "E2 ")

	m = update(t, m, tea.WindowSizeMsg{Width: 80, Height: 16})
	out = display(t, m)
	mustContain(t, out, "▸ 0 ", "  1 ", "E7")
	if n := strings.Count(out, "Warning"); n >= 5 {
		t.Errorf("a short window shows fewer events, got %d:\n%s", n, out)
	}
	m = update(t, m, tea.WindowSizeMsg{Width: 80, Height: 13})
	out = display(t, m)
	mustContain(t, out, "▸ 0 ", "  1 ")
	mustNotContain(t, out, "EVENTS")
}

func TestFilter(t *testing.T) {
	ms := created(serving(3, 2).Obj())
	s := Snapshot{Serving: ms, Synced: true, Pods: append(append(fixtures.Group("demo", 0, 2, revOld),
		fixtures.Pod("demo", 1, 0, revOld).Obj(), fixtures.Pod("demo", 1, 1, revOld).Unschedulable("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.").Obj()),
		fixtures.Group("demo", 2, 2, revOld)...)}
	m := feed(t, newTestModel(t, "demo", 100, 30, nil), s)

	m, _ = press(t, m, "/")
	for _, r := range "insufficient gpu" {
		m, _ = press(t, m, string(r))
	}
	out := display(t, m)
	mustContain(t, out, "/insufficient gpu", "▸ 1 ")
	mustNotContain(t, out, "  0   ", "  2   ")

	m, _ = press(t, m, "enter")
	out = display(t, m)
	mustContain(t, out, "1 of 3 groups", "filter /insufficient gpu  (esc clears)", "▸ 1 ")

	// the filter holds across updates: group 2 failing now matches too
	s.Pods[5] = fixtures.Pod("demo", 2, 1, revOld).Unschedulable("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.").Obj()
	m = feed(t, m, s)
	out = display(t, m)
	mustContain(t, out, "2 of 3 groups", "▸ 1 ", "  2 ")

	// nothing matches
	m, _ = press(t, m, "/", "x", "y", "z")
	mustContain(t, display(t, m), "no group matches the filter")
	m, _ = press(t, m, "esc")
	out = display(t, m)
	mustContain(t, out, "  0   ", "▸ 1 ", "  2   ")
	mustNotContain(t, out, "2 of 3 groups", "filter /")

	// esc on the grid clears an applied filter
	m, _ = press(t, m, "/", "g", "2", "enter")
	mustNotContain(t, display(t, m), "  0   ")
	m, _ = press(t, m, "esc")
	mustContain(t, display(t, m), "  0   ")
}

func TestHelpScreen(t *testing.T) {
	m := feed(t, newTestModel(t, "demo", 100, 30, nil), demoSnapshot())
	m, _ = press(t, m, "?")
	out := display(t, m)
	golden.RequireEqual(t, out)
	mustContain(t, out, "kubectl llm watch: keys", "r restart group", "R restart serving", "p pause/resume",
		"P promote canary", "A abort canary", "filter", "Pod states", "● Ready", "◐ Loading", "○ Pending",
		"✗ Failing", "↻ Terminating", "· Missing", "partition line")
	m, _ = press(t, m, "x")
	out = display(t, m)
	mustNotContain(t, out, "Pod states")
	mustContain(t, out, "▸ 0 ")
}

func TestQuit(t *testing.T) {
	m := feed(t, newTestModel(t, "demo", 100, 30, nil), demoSnapshot())
	for _, k := range []string{"q", "ctrl+c"} {
		_, cmd := press(t, m, k)
		if cmd == nil {
			t.Fatalf("%s: no command", k)
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Errorf("%s does not quit", k)
		}
	}
}

func TestSnapshotsCoalesce(t *testing.T) {
	m := newTestModel(t, "demo", 100, 30, nil)
	m.stream = newStream(t.Context(), nil)
	first := demoSnapshot()
	last := demoSnapshot()
	last.Pods[3] = fixtures.Pod("demo", 1, 1, revOld).Obj()

	next, tick := m.Update(snapshotMsg{stream: m.stream.id, snap: first})
	if tick == nil {
		t.Fatal("the first snapshot must schedule a redraw")
	}
	next, again := next.(Model).Update(snapshotMsg{stream: m.stream.id, snap: last})
	if again != nil {
		t.Fatal("a second snapshot before the redraw must not schedule another")
	}
	// a snapshot of a stream closed since is dropped
	next, _ = next.(Model).Update(snapshotMsg{stream: m.stream.id + 100, snap: Snapshot{}})
	if mustNotContain(t, display(t, next.(Model)), "● ◐"); t.Failed() {
		return
	}
	next, rearm := next.(Model).Update(flushMsg{})
	if rearm == nil {
		t.Error("the redraw must re-arm the wait for the next change")
	}
	out := display(t, next.(Model))
	if l := lineWith(t, out, "  1 "); !strings.Contains(l, "● ●") {
		t.Errorf("the redraw shows the latest snapshot: %q", l)
	}
}

func TestUntilDoneQuitsWhenTheRolloutIsDone(t *testing.T) {
	m := newModel(Config{Namespace: "default", Name: "demo", Clock: clock, UntilDone: true}, nil)
	m = update(t, m, tea.WindowSizeMsg{Width: 100, Height: 30})
	s := demoSnapshot()
	closed, cancel := context.WithCancel(t.Context())
	cancel() // the re-armed wait returns at once
	m.stream = newStream(closed, nil)
	next, _ := m.Update(snapshotMsg{stream: m.stream.id, snap: s})
	_, cmd := next.(Model).Update(flushMsg{})
	if isQuit(cmd) {
		t.Fatal("quit while the rollout is in progress")
	}
	s.Serving.Status.Conditions[0].Reason, s.Serving.Status.Conditions[0].Message = v1.ReasonRolloutComplete, "2 of 2 groups ready"
	next, _ = next.(Model).Update(snapshotMsg{stream: m.stream.id, snap: s})
	final, cmd := next.(Model).Update(flushMsg{})
	if !isQuit(cmd) {
		t.Fatal("the rollout is complete: the view should quit")
	}
	if err := final.(Model).Result(); err != nil {
		t.Errorf("result %v", err)
	}
}

func isQuit(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	_, ok := cmd().(tea.QuitMsg)
	return ok
}

// The operator's Degraded reason (here a FailedCreate from Pod Security) shows in the live view,
// not only groups "not created yet".
func TestTheLiveViewNamesWhyGroupsCannotBeCreated(t *testing.T) {
	ms := created(serving(1, 2).Obj())
	ms.Status.ObservedGeneration = ms.Generation
	ms.Status.Conditions = append(ms.Status.Conditions, metav1.Condition{Type: v1.ConditionDegraded, Status: metav1.ConditionTrue,
		Reason: v1.ReasonFailedCreate, Message: `statefulset demo cannot create its pods: pods "demo-0" is forbidden: violates PodSecurity`})
	m := feed(t, newTestModel(t, "demo", 160, 30, nil), Snapshot{Serving: ms, Synced: true})
	out := display(t, m)
	mustContain(t, out, "degraded, FailedCreate: statefulset demo cannot create its pods")
}
