package operator

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/scheme"
)

// serviceAPI stands for the API server's Service creates: each apply waits for a release when
// held, then fails with the error set, or is recorded.
type serviceAPI struct {
	mu      sync.Mutex
	hold    chan struct{} // nil: not held
	started chan string   // each apply's Service name as it starts
	err     error
	applied []*corev1ac.ServiceApplyConfiguration
}

func (a *serviceAPI) apply(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	svc, ok := obj.(*corev1ac.ServiceApplyConfiguration)
	if !ok {
		return c.Apply(ctx, obj, opts...)
	}
	select {
	case a.started <- ptr.Deref(svc.Name, ""):
	default: // nobody is counting any more
	}
	a.mu.Lock()
	hold := a.hold
	a.mu.Unlock()
	if hold != nil {
		<-hold
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return a.err
	}
	a.applied = append(a.applied, svc)
	svc.WithResourceVersion("1")
	return nil
}

func (a *serviceAPI) set(hold chan struct{}, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hold, a.err = hold, err
}

func (a *serviceAPI) appliedLabels() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, s := range a.applied {
		out = append(out, s.Labels["try"])
	}
	return out
}

// startMaker runs a serviceMaker of one creator over a fake API holding the given servings.
func startMaker(t *testing.T, api *serviceAPI, servings ...client.Object) *serviceMaker {
	t.Helper()
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(servings...).Build(),
		interceptor.Funcs{Apply: api.apply})
	r := &Reconciler{Client: c, Live: c}
	m := newServiceMaker(r, 1, testr.New(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Start(ctx) }()
	t.Cleanup(func() {
		api.set(nil, nil)
		cancel()
		<-done
	})
	return m
}

func makerServing(name string) *v1.ModelServing {
	return &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
}

func desiredService(serving, try string) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(serving+"-api", "ns").WithLabels(map[string]string{"try": try})
}

func waitStarted(t *testing.T, api *serviceAPI, want string) {
	t.Helper()
	select {
	case got := <-api.started:
		if got != want {
			t.Fatalf("a create of Service %s started, want %s", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no create of Service %s started", want)
	}
}

// waitApplied waits up to 10 s for n Services applied.
func waitApplied(api *serviceAPI, n int) {
	deadline := time.Now().Add(10 * time.Second)
	for len(api.appliedLabels()) < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

func waitWake(t *testing.T, m *serviceMaker, want string) {
	t.Helper()
	select {
	case e := <-m.wake:
		if e.Object.GetName() != want {
			t.Fatalf("serving %s woken, want %s", e.Object.GetName(), want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("serving %s not woken after its Service failed", want)
	}
}

// A pass hands the Service over and goes on while the API server is still at the create. Of a
// queued Service, the latest one wanted is made; one being made is left to that create (the pass
// after it applies any difference as for any Service). While either, the Service is busy: a pass
// that does not find it in the cache does not ask the API server for it.
func TestTheServiceMakerDoesNotHoldThePassAndMakesTheLatestService(t *testing.T) {
	api := &serviceAPI{started: make(chan string, 16)}
	hold := make(chan struct{})
	api.set(hold, nil)
	qwen, llama := makerServing("qwen"), makerServing("llama")
	m := startMaker(t, api, qwen, llama)
	key := func(s string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: s + "-api"} }

	if err := m.make(qwen, desiredService("qwen", "1")); err != nil {
		t.Fatalf("make: %v", err)
	}
	waitStarted(t, api, "qwen-api") // the only creator is in the API server's create, held
	for _, try := range []string{"1", "2"} {
		if err := m.make(llama, desiredService("llama", try)); err != nil {
			t.Fatalf("make while the creator is held: %v", err)
		}
		if err := m.make(qwen, desiredService("qwen", "2")); err != nil {
			t.Fatalf("make while its create is held: %v", err)
		}
	}
	if !m.busy(key("qwen")) || !m.busy(key("llama")) {
		t.Error("a Service being made or queued is not busy")
	}
	close(hold)
	waitStarted(t, api, "llama-api")
	deadline := time.Now().Add(10 * time.Second)
	for (len(api.appliedLabels()) < 2 || m.busy(key("llama"))) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := api.appliedLabels(); len(got) != 2 || got[0] != "1" || got[1] != "2" {
		t.Fatalf("applied %v, want qwen's first Service once, then llama's latest", got)
	}
	if m.busy(key("qwen")) || m.busy(key("llama")) {
		t.Error("a Service made is still busy")
	}
	if rv, _ := m.r.applied.Load(childKey{"Service", key("qwen")}); rv != "1" {
		t.Errorf("the applied bookkeeping holds %v, want the create's resourceVersion", rv)
	}
}

// A create that fails wakes the serving, whose pass then gets the error to report, and is tried
// again until it goes through.
func TestAFailedServiceCreateIsReportedToThePassAndTriedAgain(t *testing.T) {
	api := &serviceAPI{started: make(chan string, 64)}
	quota := apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "qwen-api",
		errors.New("exceeded quota: q, requested: services=1, used: services=0, limited: services=0"))
	api.set(nil, quota)
	ms := makerServing("qwen")
	m := startMaker(t, api, ms)

	if err := m.make(ms, desiredService("qwen", "1")); err != nil {
		t.Fatalf("make: %v", err)
	}
	waitWake(t, m, "qwen")
	if err := m.make(ms, desiredService("qwen", "1")); !apierrors.IsForbidden(err) {
		t.Fatalf("the pass after the failure got %v, want the create's Forbidden to report", err)
	}
	api.set(nil, nil) // the quota is raised
	waitApplied(api, 1)
	if len(api.appliedLabels()) != 1 {
		t.Fatal("the Service was not created once the API server took it")
	}
	if err := m.make(ms, desiredService("qwen", "1")); err != nil {
		t.Errorf("a pass after the Service was made got %v, want no error", err)
	}
}

// A Service the API server refuses as invalid (an admission policy, say) is reported to the pass
// as a spec error, once: the retries that fail alike wake nobody. It is made once the API server
// takes it.
func TestARefusedServiceWakesItsServingOnceAndIsMadeOnceTaken(t *testing.T) {
	api := &serviceAPI{started: make(chan string, 64)}
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "qwen-api", nil)
	api.set(nil, invalid)
	ms := makerServing("qwen")
	m := startMaker(t, api, ms)

	if err := m.make(ms, desiredService("qwen", "1")); err != nil {
		t.Fatalf("make: %v", err)
	}
	waitWake(t, m, "qwen")
	var spec *specError
	if err := m.make(ms, desiredService("qwen", "1")); !errors.As(err, &spec) {
		t.Fatalf("the pass after the refusal got %v, want the spec error", err)
	}
	waitStarted(t, api, "qwen-api")
	waitStarted(t, api, "qwen-api") // tried again, refused alike
	select {
	case e := <-m.wake:
		t.Fatalf("serving %s woken again by a refusal already reported", e.Object.GetName())
	default:
	}
	api.set(nil, nil)
	waitApplied(api, 1)
	if len(api.appliedLabels()) != 1 {
		t.Fatal("the Service was not made once the API server took it")
	}
}

// Nothing is created for a serving that is gone or being deleted since its pass read it.
func TestNoServiceIsMadeForAServingThatIsNotLive(t *testing.T) {
	api := &serviceAPI{started: make(chan string, 64)}
	deleting := makerServing("going")
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	deleting.Finalizers = []string{v1.FinalizerChildren}
	m := startMaker(t, api, deleting)
	replaced := makerServing("replaced")
	live := makerServing("replaced")
	live.UID = "another"
	if err := m.r.Client.Create(context.Background(), live); err != nil {
		t.Fatal(err)
	}

	for _, ms := range []*v1.ModelServing{makerServing("gone"), deleting, replaced} {
		if err := m.make(ms, desiredService(ms.Name, "1")); err != nil {
			t.Fatalf("make %s: %v", ms.Name, err)
		}
	}
	select {
	case name := <-api.started:
		t.Fatalf("Service %s created for a serving that is not live", name)
	case e := <-m.wake:
		t.Fatalf("serving %s woken as if its Service failed", e.Object.GetName())
	case <-time.After(500 * time.Millisecond):
	}
	if n := m.queue.Len(); n != 0 {
		t.Errorf("%d Services still queued", n)
	}
	m.forget(client.ObjectKey{Namespace: "ns", Name: "gone"})
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.failed) != 0 {
		t.Errorf("failures recorded for servings that are not live: %v", m.failed)
	}
}
