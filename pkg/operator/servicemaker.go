package operator

import (
	"context"
	"errors"
	"sync"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
)

// DefaultServiceCreators is how many new Services the operator creates at once
// (--concurrent-service-creates). Under a burst of 1000 servings on 2 cores, eight made the
// burst's Services sooner than four (the API server's ClusterIP allocator idles less between
// creates; sixteen made them no sooner than eight), and the last servings waited 3–5 s for theirs
// instead of 7–9 s; but the burst's work then came closer together, and the operator's RSS after
// it was 28–35 MiB over LWS alone's (free heap the runtime had not returned yet) against 3–9 MiB
// with four, over the 15 MiB the operator is held to (docs/performance.md, session 41).
const DefaultServiceCreators = 4

// serviceMaker creates the Services of servings that have none, beside the serving passes rather
// than in them. The API server gives a new Service its ClusterIP under one lock for the whole
// cluster (its IP allocator's, held across the create of the address's IPAddress object), so
// Service creates wait for each other there: in a burst of 1000 servings our creates took 0.8 s on
// average, 16 at a time, against 47 ms for the same creates one at a time. A pass that waited for
// one held a worker all that time, and the passes of every other serving (a group that became
// ready, a rollout's next step) queued behind it. Here the creators (DefaultServiceCreators) keep
// the allocator busy; the pass goes on to its status, and the Service's create event brings the
// serving's next pass.
//
// A serving's desired Service is kept until it is made, the latest one winning. Each create first
// confirms that its serving is still live (nothing is written for a serving deleted or replaced
// since its pass read it). A create that fails is tried again with the queue's backoff (per
// Service, from 5 ms doubling), at once when a pass wants another Service. Its error is kept: the
// serving's next pass, which the maker asks for when the error is new, reports it as a failed
// create in the pass was reported (a condition, or a spec error for a Service refused as invalid,
// which now also heals by itself once whatever refused it is gone).
type serviceMaker struct {
	r       *Reconciler
	workers int
	log     logr.Logger
	queue   workqueue.TypedRateLimitingInterface[types.NamespacedName]
	// wake asks for a pass of a serving whose Service could not be made (a channel source of
	// the serving controller).
	wake chan event.GenericEvent

	mu      sync.Mutex
	pending map[types.NamespacedName]serviceToMake // by the Service's key
	failed  map[types.NamespacedName]failedService
	// creating are the Services a creator is making now.
	creating map[types.NamespacedName]bool
}

// serviceToMake is one Service to create and the serving it is for.
type serviceToMake struct {
	serving *v1.ModelServing
	desired *corev1ac.ServiceApplyConfiguration
	hash    string
}

// failedService is the last failed create of a Service: what it was and why.
type failedService struct {
	hash string
	err  error
}

func newServiceMaker(r *Reconciler, workers int, log logr.Logger) *serviceMaker {
	return &serviceMaker{
		r:       r,
		workers: max(workers, 1),
		log:     log,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "service-maker"}),
		wake:     make(chan event.GenericEvent, 64),
		pending:  map[types.NamespacedName]serviceToMake{},
		failed:   map[types.NamespacedName]failedService{},
		creating: map[types.NamespacedName]bool{},
	}
}

// make queues the creation of desired for the serving ms (a pass's copies: not changed after). It
// returns the error of the last create of the same Service, which is then already due again. A
// Service being created now is left to that create: a pass that finds it different once made
// applies it as any other.
func (m *serviceMaker) make(ms *v1.ModelServing, desired *corev1ac.ServiceApplyConfiguration) error {
	key := types.NamespacedName{Namespace: ptr.Deref(desired.Namespace, ""), Name: ptr.Deref(desired.Name, "")}
	hash := IntentHash(desired)
	m.mu.Lock()
	defer m.mu.Unlock()
	f, failed := m.failed[key]
	failed = failed && f.hash == hash
	if !m.creating[key] {
		// Only who the serving is: the pass goes on writing its status into ms.
		who := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ms.Namespace, Name: ms.Name, UID: ms.UID, ResourceVersion: ms.ResourceVersion}}
		m.pending[key] = serviceToMake{serving: who, desired: desired, hash: hash}
		if !failed {
			m.queue.Add(key)
		}
	}
	if failed {
		return f.err // also while a retry is under way
	}
	return nil
}

// busy reports whether the Service is queued or being created: a pass that does not find it in the
// cache need not ask the API server whether someone else's object has its name (the create will
// tell).
func (m *serviceMaker) busy(key types.NamespacedName) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, queued := m.pending[key]
	return queued || m.creating[key]
}

// creatingNow reports whether a creator is making the Service now (its create not yet returned).
func (m *serviceMaker) creatingNow(key types.NamespacedName) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.creating[key]
}

// forget drops what is pending or failed for the Services of a serving that is gone.
func (m *serviceMaker) forget(serving types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, item := range m.pending {
		if client.ObjectKeyFromObject(item.serving) == serving {
			delete(m.pending, key)
		}
	}
	for key := range m.failed {
		if key.Namespace == serving.Namespace && servingOfChild(naming.ServingOfService(key.Name)) == serving.Name {
			delete(m.failed, key)
		}
	}
}

// Start runs the creators until ctx ends (a manager Runnable: only on the elected operator).
func (m *serviceMaker) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range m.workers {
		wg.Go(func() {
			for m.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	m.queue.ShutDown()
	wg.Wait()
	return nil
}

// next creates the Service of one queued key; false once the queue is shut down.
func (m *serviceMaker) next(ctx context.Context) bool {
	key, shutdown := m.queue.Get()
	if shutdown {
		return false
	}
	defer m.queue.Done(key)
	m.mu.Lock()
	item, ok := m.pending[key]
	delete(m.pending, key)
	m.creating[key] = ok
	m.mu.Unlock()
	if !ok {
		m.queue.Forget(key)
		return true
	}
	err := m.create(ctx, item)
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.creating, key)
	if ctx.Err() != nil {
		return true
	}
	if err == nil || errors.Is(err, errServingNotLive) {
		// Made, or not to be made: a serving gone or replaced is looked at again by its events.
		delete(m.failed, key)
		m.queue.Forget(key)
		return true
	}
	if apierrors.IsConflict(err) {
		// The create is create-only: an object has the name (someone else's, which the serving's
		// pass reports, or ours before the cache saw it). Not to be tried again: the serving's
		// next pass reads it and decides.
		delete(m.failed, key)
		m.queue.Forget(key)
		m.wakeServing(item.serving)
		return true
	}
	if _, newer := m.pending[key]; !newer {
		m.pending[key] = item
	}
	m.queue.AddRateLimited(key)
	last, failedBefore := m.failed[key]
	m.failed[key] = failedService{hash: item.hash, err: err}
	if failedBefore && last.hash == item.hash && last.err.Error() == err.Error() {
		return true // reported already
	}
	m.log.Error(err, "Creating a Service failed; trying again", "service", key)
	m.wakeServing(item.serving)
	return true
}

// wakeServing asks for a pass of the serving.
func (m *serviceMaker) wakeServing(serving *v1.ModelServing) {
	select {
	case m.wake <- event.GenericEvent{Object: serving}:
	default: // full of wake-ups already: the serving's next pass, whatever brings it, sees to it
	}
}

// create confirms the serving is live and creates its Service, as applyService would in a pass.
func (m *serviceMaker) create(ctx context.Context, item serviceToMake) error {
	r := m.r
	if err := r.confirmLive(ctx, item.serving); err != nil {
		return err
	}
	key := types.NamespacedName{Namespace: ptr.Deref(item.desired.Namespace, ""), Name: ptr.Deref(item.desired.Name, "")}
	r.unseen.made(client.ObjectKeyFromObject(item.serving), childKey{"Service", key})
	item.desired.WithResourceVersion(createOnly(item.serving))
	if err := r.apply(ctx, item.desired, "Service", key); err != nil {
		return err
	}
	r.applied.Store(childKey{"Service", key}, ptr.Deref(item.desired.ResourceVersion, ""))
	r.Failpoints.Hit("after-service", key.Namespace+"/"+servingOfChild(naming.ServingOfService(key.Name)))
	return nil
}
