package cli_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/cli"
	"github.com/kubectl-llm/kubectl-llm/pkg/scheme"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// brokenWatches is a client whose watches end after one event, as watches do when an API server
// restarts or a load balancer cuts idle connections, and whose second watch is refused with 410
// Gone, as when the resourceVersion it resumes from was compacted away.
type brokenWatches struct {
	client.WithWatch
	mu             sync.Mutex
	lists, watches int
}

func (b *brokenWatches) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	b.mu.Lock()
	b.lists++
	b.mu.Unlock()
	return b.WithWatch.List(ctx, list, opts...)
}

func (b *brokenWatches) Watch(ctx context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	b.mu.Lock()
	b.watches++
	n := b.watches
	b.mu.Unlock()
	if n == 2 {
		return nil, apierrors.NewResourceExpired("too old resource version")
	}
	w, err := b.WithWatch.Watch(ctx, list, opts...)
	if err != nil {
		return nil, err
	}
	return closeAfterOneEvent(w), nil
}

func (b *brokenWatches) counts() (lists, watches int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lists, b.watches
}

// closeAfterOneEvent passes one event of w on, then closes the channel.
func closeAfterOneEvent(w watch.Interface) watch.Interface {
	out := make(chan watch.Event)
	stop := make(chan struct{})
	var once sync.Once
	go func() {
		defer close(out)
		defer w.Stop()
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			select {
			case out <- ev:
			case <-stop:
			}
		case <-stop:
		}
	}()
	return &chanWatch{ch: out, stop: func() { once.Do(func() { close(stop) }) }}
}

type chanWatch struct {
	ch   chan watch.Event
	stop func()
}

func (c *chanWatch) Stop()                          { c.stop() }
func (c *chanWatch) ResultChan() <-chan watch.Event { return c.ch }

// startBroken runs a command in the background through a brokenWatches client; done gets its
// exit code.
func startBroken(t *testing.T, ctx context.Context, now time.Time, args ...string) (b *brokenWatches, out, errOut *syncBuffer, done <-chan int) {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	b = &brokenWatches{WithWatch: c}
	out, errOut = &syncBuffer{}, &syncBuffer{}
	o := &cli.RootOptions{ConfigFlags: genericclioptions.NewConfigFlags(true), Client: b,
		Streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}, Clock: clocktesting.NewFakePassiveClock(now)}
	cmd := cli.NewRootCommandWith(o)
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
	codes := make(chan int, 1)
	go func() { codes <- cli.Execute(ctx, cmd, errOut) }()
	return b, out, errOut, codes
}

// waitForWatches waits until the command opened n watches.
func (b *brokenWatches) waitForWatches(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, w := b.counts(); w < n; _, w = b.counts() {
		if time.Now().After(deadline) {
			t.Fatalf("the command opened fewer than %d watches", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRolloutStatusSurvivesClosedAndExpiredWatches: rollout status keeps waiting through watches
// that close and a resourceVersion that expired (it resumes, and lists again), and still sees
// every step of the rollout to its end.
func TestRolloutStatusSurvivesClosedAndExpiredWatches(t *testing.T) {
	ns := namespace(t, "rollout-status-relist")
	now := time.Now()
	ms := seedServing(t, ns, fixtures.Serving("qwen", ns).Replicas(2))
	writeStatus(t, ms, v1.ModelServingStatus{Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 1, Conditions: conditions(now, available, rollingOut, notDegraded)})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	broken, out, errOut, done := startBroken(t, ctx, now, "-n", ns, "rollout", "status", "qwen", "--timeout", "50s")

	waitFor(t, out, "Waiting for rollout to finish: 1 of 2 groups updated...")
	writeStatus(t, ms, v1.ModelServingStatus{Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 2, Conditions: conditions(now, available, rollingOut, notDegraded)})
	waitFor(t, out, "1 of 2 updated groups ready...")
	broken.waitForWatches(t, 3) // past the refused one: a relist happened
	writeStatus(t, ms, v1.ModelServingStatus{Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, Conditions: conditions(now, available, complete, notDegraded)})
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
		}
	case <-ctx.Done():
		t.Fatalf("rollout status did not see the rollout finish; it printed:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "successfully rolled out") {
		t.Errorf("stdout %q does not say the rollout finished", out.String())
	}
	if errOut.String() != "" {
		t.Errorf("stderr %q, want nothing (the retries are not logged)", errOut.String())
	}
	if lists, watches := broken.counts(); lists < 2 || watches < 3 {
		t.Errorf("%d lists and %d watches: the expired watch did not make it list again", lists, watches)
	}
}

// TestGetWatchPrintsEachChangeOnceThroughARelist: get -w through watches that close and expire
// prints the table once and then one line per change: not the listed servings again (the
// watch hands them over after the list), and not the unchanged ones a relist hands over.
func TestGetWatchPrintsEachChangeOnceThroughARelist(t *testing.T) {
	ns := namespace(t, "get-watch-relist")
	ms := seedServing(t, ns, fixtures.Serving("qwen", ns).Replicas(2))
	seedServing(t, ns, fixtures.Serving("still", ns))
	now := clockAfter(t, ms)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	broken, out, errOut, done := startBroken(t, ctx, now, "-n", ns, "get", "-w")

	waitFor(t, out, "still")
	writeStatus(t, ms, v1.ModelServingStatus{Phase: v1.PhaseProgressing, Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 2, ReadyGroups: "1/2"})
	waitFor(t, out, "Progressing")
	broken.waitForWatches(t, 3) // past the refused watch: a relist
	writeStatus(t, ms, v1.ModelServingStatus{Phase: v1.PhaseReady, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, ReadyGroups: "2/2"})
	waitFor(t, out, "Ready")
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 || strings.Count(out.String(), "still") != 1 {
		t.Errorf("want the header, 2 servings and 2 changes of qwen, each once; got:\n%s", out.String())
	}
	if lists, _ := broken.counts(); lists < 2 {
		t.Errorf("%d lists: the expired watch did not make it list again", lists)
	}
}
