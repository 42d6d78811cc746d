package tui

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// The control plane starts only for the tests that need it, once, and stops in TestMain.
var (
	envOnce sync.Once
	env     *testenv.Env
	envErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop control plane:", err)
		}
	}
	os.Exit(code)
}

func controlPlane(t *testing.T) (*testenv.Env, client.WithWatch, string) {
	t.Helper()
	envOnce.Do(func() { env, envErr = testenv.Start() })
	if envErr != nil {
		t.Fatalf("start the control plane: %v", envErr)
	}
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tui-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return env, wc, ns.Name
}

func apiServing(ns string, replicas, size int32) *v1.ModelServing {
	return &v1.ModelServing{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: ns},
		Spec: v1.ModelServingSpec{Model: "Qwen/Qwen3-0.6B", Replicas: &replicas, GroupSize: size,
			Engine: v1.EngineSpec{Image: "vllm/vllm-openai:v0.11.0"}},
	}
}

func apiPod(ns string, group, worker int, rev string) *corev1.Pod {
	name := fmt.Sprintf("demo-%d", group)
	if worker > 0 {
		name += fmt.Sprintf("-%d", worker)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			v1.LabelName: "demo", v1.LabelRevision: rev, lwsv1.SetNameLabelKey: "demo",
			lwsv1.GroupIndexLabelKey: fmt.Sprint(group), lwsv1.WorkerIndexLabelKey: fmt.Sprint(worker),
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "vllm/vllm-openai:v0.11.0"}}},
	}
}

// setPodStatus writes a pod's status through the status subresource, as a kubelet would.
func setPodStatus(t *testing.T, c client.Client, pod *corev1.Pod, ready bool) {
	t.Helper()
	ctx := context.Background()
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	readyStatus := corev1.ConditionFalse
	if ready {
		readyStatus = corev1.ConditionTrue
	}
	started := metav1.NewTime(time.Now().Add(-time.Minute))
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &started
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: started},
		{Type: corev1.PodReady, Status: readyStatus, LastTransitionTime: metav1.Now()},
	}
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatalf("update the status of pod %s: %v", pod.Name, err)
	}
}

// viewer drives a model the way the program does: it runs the stream's wait, takes the redraw
// at once, and re-arms.
type viewer struct {
	t    *testing.T
	m    Model
	wait tea.Cmd
}

func startViewer(t *testing.T, ctx context.Context, cfg Config) *viewer {
	t.Helper()
	m := NewModel(ctx, cfg)
	m = update(t, m, tea.WindowSizeMsg{Width: 100, Height: 30})
	opened := m.open(cfg.Name)()
	next, wait := m.Update(opened)
	return &viewer{t: t, m: next.(Model), wait: wait}
}

// until waits for the screen to satisfy ok, taking each snapshot the stream delivers.
func (v *viewer) until(what string, ok func(string) bool) string {
	v.t.Helper()
	deadline := time.After(30 * time.Second)
	out := display(v.t, v.m)
	for !ok(out) {
		msgs := make(chan tea.Msg, 1)
		wait := v.wait
		go func() { msgs <- wait() }()
		select {
		case msg := <-msgs:
			next, _ := v.m.Update(msg)
			next, v.wait = next.(Model).Update(flushMsg{})
			v.m = next.(Model)
			if v.wait == nil {
				v.t.Fatalf("the stream was not re-armed (%s)", what)
			}
		case <-deadline:
			v.t.Fatalf("the view never showed %s:\n%s", what, out)
		}
		out = display(v.t, v.m)
	}
	return out
}

func row(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// TestViewFollowsTheAPIServer: the view sees a pod's readiness change through its watch.
func TestViewFollowsTheAPIServer(t *testing.T) {
	env, wc, ns := controlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := env.Client

	v := startViewer(t, ctx, Config{Client: wc, Namespace: ns, Name: "demo"})
	v.until("that the serving does not exist", func(out string) bool {
		return strings.Contains(out, "serving demo not found in namespace "+ns)
	})

	if err := c.Create(ctx, apiServing(ns, 1, 2)); err != nil {
		t.Fatal(err)
	}
	leader, worker := apiPod(ns, 0, 0, "demo-abc"), apiPod(ns, 0, 1, "demo-abc")
	for _, p := range []*corev1.Pod{leader, worker} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	out := v.until("two pods waiting to be scheduled", func(out string) bool {
		return strings.Contains(row(out, "▸ 0 "), "○ ○")
	})
	mustContain(t, out, "demo  Qwen/Qwen3-0.6B", "leader: waiting to be scheduled")

	setPodStatus(t, c, leader, true)
	setPodStatus(t, c, worker, false)
	out = v.until("the worker loading", func(out string) bool { return strings.Contains(row(out, "▸ 0 "), "● ◐") })
	mustContain(t, row(out, "▸ 0 "), "1/2", "worker 1: not ready: loading weights")

	setPodStatus(t, c, worker, true)
	out = v.until("the group ready", func(out string) bool { return strings.Contains(row(out, "▸ 0 "), "● ●") })
	mustContain(t, row(out, "▸ 0 "), "2/2")
	mustContain(t, out, "1/1 ready")

	// the serving's events come through their own watch
	var ms v1.ModelServing
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "demo"}, &ms); err != nil {
		t.Fatal(err)
	}
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: "demo.", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "ModelServing", Name: "demo", Namespace: ns, UID: ms.UID, APIVersion: v1.GroupVersion.String()},
		Type:           corev1.EventTypeNormal, Reason: "RolloutComplete", Message: "1 of 1 groups ready",
		LastTimestamp: metav1.Now(), FirstTimestamp: metav1.Now(), Count: 1,
		Source: corev1.EventSource{Component: "kubectl-llm"},
	}
	if err := c.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	v.until("the event", func(out string) bool { return strings.Contains(out, "RolloutComplete") })

	// a pod of another serving does not show
	other := apiPod(ns, 1, 0, "x")
	other.Name, other.Labels[v1.LabelName] = "other-1", "other"
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	setPodStatus(t, c, leader, false)
	out = v.until("the leader loading again", func(out string) bool { return strings.Contains(row(out, "▸ 0 "), "◐ ●") })
	if r := row(out, "  1 "); r != "" {
		t.Errorf("a pod of another serving shows as group 1: %q", r)
	}
}

// The list of servings shows a bad one (issue 11's template) beside the others; the servings are
// listed and watched as unstructured objects, each decoded on its own.
func TestTheListShowsABadServingBesideTheOthers(t *testing.T) {
	env, wc, ns := controlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evil := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(), "kind": "ModelServing",
		"metadata": map[string]any{"name": "evil", "namespace": ns},
		"spec":     map[string]any{"model": "x", "template": map[string]any{"spec": map[string]any{"containers": int64(5)}}},
	}}
	if err := env.Client.Create(ctx, evil); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, apiServing(ns, 1, 1)); err != nil {
		t.Fatal(err)
	}
	v := startViewer(t, ctx, Config{Client: wc, Namespace: ns})
	v.until("both servings listed", func(out string) bool { return strings.Contains(out, "evil") && strings.Contains(out, "demo") })
	// A change to the bad one comes through the watch too.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(evil), evil); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(evil.Object, "y-model", "spec", "model"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Update(ctx, evil); err != nil {
		t.Fatal(err)
	}
	v.until("the change", func(out string) bool { return strings.Contains(out, "y-model") })
}

// A stored object that does not fit the Go type becomes metadata and the Undecodable phase.
func TestDecodeServingKeepsTheMetadataOfWhatDoesNotDecode(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(), "kind": "ModelServing",
		"metadata": map[string]any{"name": "old", "namespace": "ns", "finalizers": []any{v1.FinalizerChildren}},
		"spec":     map[string]any{"model": "m", "replicas": int64(99999999999)}, // what an unbounded schema once stored
	}}
	ms := decodeServing(u)
	if ms.Name != "old" || len(ms.Finalizers) != 1 || ms.Status.Phase != PhaseUndecodable {
		t.Errorf("decoded %s/%s finalizers %v phase %s; want the metadata and phase Undecodable", ms.Namespace, ms.Name, ms.Finalizers, ms.Status.Phase)
	}
	if _, undecodable, err := v1.DecodeServing(u); !undecodable || err == nil || !strings.Contains(err.Error(), "replicas") {
		t.Errorf("DecodeServing: undecodable %v, err %v; want the field named", undecodable, err)
	}
}
