package operator_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// primaryRequests sees the requests of the primary operator (TestMain) to the API server, for
// the one namespace a test asks about.
var primaryRequests = &requestWatch{}

// requestWatch records one namespace's requests of the operator and can hold some of them back.
type requestWatch struct {
	mu        sync.Mutex
	namespace string
	log       []string // "METHOD path", in the order sent
	// hold, when set, keeps a request it matches from being sent until release is closed (or
	// for holdLimit, which counts as heldTooLong).
	hold        func(*http.Request) bool
	release     chan struct{}
	heldTooLong bool
	// releaseOn closes release once a response to a request it matches arrives.
	releaseOn func(*http.Request, *http.Response) bool
}

const holdLimit = 10 * time.Second

// watch starts recording ns's requests (and stops at the test's end).
func (w *requestWatch) watch(t *testing.T, ns string) {
	w.mu.Lock()
	w.namespace, w.log, w.hold, w.releaseOn, w.heldTooLong = ns, nil, nil, nil, false
	w.release = make(chan struct{})
	w.mu.Unlock()
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.namespace, w.hold, w.releaseOn = "", nil, nil
	})
}

// requests returns what was sent so far.
func (w *requestWatch) requests() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.log...)
}

func (w *requestWatch) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		w.mu.Lock()
		ours := w.namespace != "" && strings.Contains(req.URL.Path, "/namespaces/"+w.namespace+"/") && req.URL.Query().Get("watch") != "true"
		held := ours && w.hold != nil && w.hold(req)
		release, releaseOn := w.release, w.releaseOn
		w.mu.Unlock()
		if held {
			select {
			case <-release:
			case <-time.After(holdLimit):
				w.mu.Lock()
				w.heldTooLong = true
				w.mu.Unlock()
			}
		}
		if ours {
			w.mu.Lock()
			w.log = append(w.log, req.Method+" "+req.URL.Path)
			w.mu.Unlock()
		}
		resp, err := next.RoundTrip(req)
		if ours && err == nil && releaseOn != nil && releaseOn(req, resp) {
			w.mu.Lock()
			select {
			case <-w.release:
			default:
				close(w.release)
			}
			w.mu.Unlock()
		}
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// A new serving's first pass is the step in its groups wait on: it asks the API server nothing
// about its children (the cache holds every object of ours; a create of someone else's name is
// refused, see TestChildrenThatAreNotOursAreLeftAloneAndReported) and creates its
// LeaderWorkerSet without waiting for the write of its finalizer, which the pass's other writes
// still wait for. Here a write of the finalizer is held back until the LeaderWorkerSet is
// created. And each child is written once.
func TestANewServingsLeaderWorkerSetIsCreatedWithoutReadsOrTheFinalizerBeforeIt(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	w := primaryRequests
	w.watch(t, ns)
	lwsPath := "/apis/leaderworkerset.x-k8s.io/v1/namespaces/" + ns + "/leaderworkersets/qwen"
	w.mu.Lock()
	w.hold = func(req *http.Request) bool {
		return req.Method == http.MethodPatch && strings.HasSuffix(req.URL.Path, "/modelservings/qwen")
	}
	w.releaseOn = func(req *http.Request, resp *http.Response) bool {
		return req.Method == http.MethodPatch && req.URL.Path == lwsPath && resp.StatusCode == http.StatusCreated
	}
	w.mu.Unlock()

	if err := env.Client.Create(ctx, serving(ns, "qwen")); err != nil {
		t.Fatal(err)
	}
	waitLWS(t, ns, "qwen", func(*lwsv1.LeaderWorkerSet) bool { return true })
	got := waitServing(t, ns, "qwen", "the finalizer and a status", func(ms *v1.ModelServing) bool {
		return controllerutil.ContainsFinalizer(ms, v1.FinalizerChildren) && ms.Status.ObservedGeneration == ms.Generation
	})
	if got.Status.ObservedGeneration == 0 {
		t.Fatal("no status written")
	}
	svc := naming.ServiceName("qwen")
	testenv.Eventually(t, 20*time.Second, "the Service", func() (bool, error) {
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: svc}, &corev1.Service{})
		return err == nil, err
	})

	time.Sleep(time.Second) // long enough for a second write of a child to show
	sent := w.requests()
	w.mu.Lock()
	tooLong := w.heldTooLong
	w.mu.Unlock()
	if tooLong {
		t.Errorf("the LeaderWorkerSet was not created while the finalizer's write was held for %s: the create waits for it\n%s", holdLimit, strings.Join(sent, "\n"))
	}
	// The first pass ends with its status write. A later pass (its own writes' events bring it)
	// may run before the cache holds the Service the serviceMaker made meanwhile; it then reads
	// it from the API server, as getChild says, rather than create it again.
	firstPassSent := sent
	for i, r := range sent {
		if r == "PATCH /apis/serving.kubectl-llm.dev/v1alpha1/namespaces/"+ns+"/modelservings/qwen/status" {
			firstPassSent = sent[:i+1]
			break
		}
	}
	for _, r := range firstPassSent {
		if r == "GET "+lwsPath || strings.HasSuffix(r, "/services/"+svc) && strings.HasPrefix(r, "GET ") {
			t.Errorf("the first pass read a child from the API server: %s\n%s", r, strings.Join(sent, "\n"))
		}
	}
	// Each child is written once: the Service's create by the serviceMaker is not applied again
	// by a pass its watch event brings before the create has returned.
	for _, child := range []string{lwsPath, "/api/v1/namespaces/" + ns + "/services/" + svc} {
		if n := countOf(sent, "PATCH "+child); n != 1 {
			t.Errorf("%s written %d times, want once\n%s", child, n, strings.Join(sent, "\n"))
		}
	}
	first := -1
	for i, r := range sent {
		if r == "PATCH "+lwsPath {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatalf("no apply of the LeaderWorkerSet among\n%s", strings.Join(sent, "\n"))
	}
	t.Logf("requests before the LeaderWorkerSet's create: %q", sent[:first])
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}
