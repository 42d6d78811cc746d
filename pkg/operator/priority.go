package operator

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// Queue priorities. A serving that is going away (deleted, its finalizer still on, or already
// gone) is bulk work: a namespace deleted with hundreds of servings in it makes a pass of each at
// every event of its children. Those passes wait behind the passes of live servings, so a live
// serving whose pods changed is not queued behind them (controller-runtime's priority queue serves
// the highest priority first; an item added again with a higher priority is raised).
//
// A pass that may move a serving's readiness (a pod into or out of Ready, the serving's Service
// made or gone) goes before the other live ones, at readinessPriority: it is what a user or a
// script waits on, and in a burst of servings it found hundreds of other passes queued ahead of it
// (the servings' creations, their pods' batched updates), so a serving whose last piece came went
// Ready half a second or more later (run CE of session 41: p99 530 ms after the later of its
// LeaderWorkerSet's Ready and its Service).
var (
	bulkPriority      = handler.LowPriority
	readinessPriority = 10
)

// servingQueue says how an event of a serving's child or pod queues the serving: not at all when
// the cache holds no such serving (one deleted: its pods and children go on changing for seconds
// after it is gone, and a pass would only find it gone; a serving the cache has not seen yet is
// queued by its own creation) or when its namespace is being deleted, and at the bulk priority
// when it is being deleted. A namespace deleted with hundreds of servings in it loses their pods
// and children while the servings still stand (the namespace controller deletes pods first, then
// every other kind, and a serving waits for its finalizer): the pass of such a serving only waits
// for its own deletion, whose event queues it (and lets it go at once), so its children's events
// queue nothing (they were some twenty passes per serving of a namespace of 150 going).
func servingQueue(ctx context.Context, cache client.Reader, key types.NamespacedName) (queue, bulk bool) {
	ms := &v1.ModelServing{}
	if err := cache.Get(ctx, key, ms); err != nil {
		// Gone, or unreadable: a serving that cannot be read is still queued, at the bulk priority.
		return client.IgnoreNotFound(err) != nil, true
	}
	if namespaceDeleted(ctx, cache, key.Namespace) {
		return false, true
	}
	return true, !ms.DeletionTimestamp.IsZero()
}

// namespaceDeleted reports whether the namespace is being deleted, from its metadata in the
// reader (the manager's cache holds every namespace's). A namespace the reader does not hold, or
// cannot read, is not taken as deleted: its servings then go as their own deletion comes.
func namespaceDeleted(ctx context.Context, r client.Reader, name string) bool {
	if r == nil || name == "" {
		return false
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Get(ctx, types.NamespacedName{Name: name}, ns); err != nil {
		return false
	}
	return !ns.DeletionTimestamp.IsZero()
}

// namespaceEvents queues the servings of a namespace whose deletion begins, at the bulk priority:
// each pass takes its serving's finalizer off before the namespace controller deletes the
// serving (see Reconcile). Nothing else of a namespace queues a pass.
func namespaceEvents(cache client.Reader) handler.EventHandler {
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if !e.ObjectOld.GetDeletionTimestamp().IsZero() || e.ObjectNew.GetDeletionTimestamp().IsZero() {
				return
			}
			list := &v1.ModelServingList{}
			if err := cache.List(ctx, list, client.InNamespace(e.ObjectNew.GetName())); err != nil {
				return // each serving's own deletion still queues it (finalize)
			}
			reqs := make([]reconcile.Request, 0, len(list.Items))
			for i := range list.Items {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
			enqueue(q, bulkPriority, 0, reqs...)
		},
	}
}

// enqueue adds the requests at the priority (0 is the handler's default: low for the initial list
// and resyncs), after the delay when there is one, on a queue that has priorities; on one that has
// none, at once or after the delay. A request already queued keeps the higher of its two
// priorities and the earlier of its two times, and one added with no delay is ready at once: a
// delayed add never holds back a pass already due.
func enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], priority int, after time.Duration, reqs ...reconcile.Request) {
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok && (priority != 0 || after > 0) {
		opts := priorityqueue.AddOpts{After: after}
		if priority != 0 {
			opts.Priority = &priority
		}
		pq.AddWithOpts(opts, reqs...)
		return
	}
	for _, r := range reqs {
		if after > 0 {
			q.AddAfter(r, after)
			continue
		}
		q.Add(r)
	}
}

// passPriority is the priority of a live serving's pass (bulkPriority for one going away), at
// readinessPriority when the event may move its readiness.
func passPriority(bulk, movesReadiness bool) int {
	switch {
	case bulk:
		return bulkPriority
	case movesReadiness:
		return readinessPriority
	}
	return 0
}

// servingEvents enqueues the serving of every event, at the bulk priority once it is being
// deleted, but for the update that is the echo of our own write (echo: see ownEchoes).
func servingEvents(echo func(client.Object) bool) handler.EventHandler {
	add := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		enqueue(q, passPriority(!o.GetDeletionTimestamp().IsZero(), false), 0, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if echo(e.ObjectNew) {
				return
			}
			add(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
	}
}

// mappedToServing enqueues the servings an object of another kind maps to (both the old and the
// new object of an update, as handler.EnqueueRequestsFromMapFunc does), at the bulk priority for
// a serving that is going away, and none that the cache does not hold (see servingQueue).
//
// batch delays the pass an object's creation or update queues (never its deletion's, nor a pod's
// moving into or out of Ready): the events that come within it make one pass. A group that
// restarts is some twenty pod events in half a second (each pod deleted, made, scheduled, started,
// ready), and a pass for each only recomputed the same status while the cluster was busiest; what
// a user or a script waits on comes at once anyway (a pod's readiness, and the LeaderWorkerSet's
// own status, queued without delay). 0 queues every event's pass at once. A pod's deletion batched
// too (tried in session 23, see docs/performance.md) moved the pass into the group's remaking:
// the recovery and rollout while servings were deleted one at a time took 1.2–1.4× LWS alone's in
// both runs, against 1.09× / 1.07× with it at once.
func mappedToServing(cache client.Reader, batch time.Duration, toServings handler.MapFunc) handler.EventHandler {
	return mapToServing(cache, batch, false, toServings)
}

// serviceToServing maps a Service's events to its serving as mappedToServing does, at once, its
// creation and deletion at readinessPriority: a serving is Ready only once its Service is made,
// and in a burst the Service is often the last piece to come.
func serviceToServing(cache client.Reader, toServings handler.MapFunc) handler.EventHandler {
	return mapToServing(cache, 0, true, toServings)
}

func mapToServing(cache client.Reader, batch time.Duration, madeOrGoneMovesReadiness bool, toServings handler.MapFunc) handler.EventHandler {
	add := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], after time.Duration, movesReadiness bool, objs ...client.Object) {
		seen := map[reconcile.Request]bool{}
		for _, o := range objs {
			for _, req := range toServings(ctx, o) {
				if seen[req] {
					continue
				}
				seen[req] = true
				if queue, bulk := servingQueue(ctx, cache, req.NamespacedName); queue {
					enqueue(q, passPriority(bulk, movesReadiness), after, req)
				}
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, batch, madeOrGoneMovesReadiness, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			after, moves := batch, readinessChanged(e.ObjectOld, e.ObjectNew)
			if moves {
				after = 0
			}
			add(ctx, q, after, moves, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, 0, madeOrGoneMovesReadiness, e.Object)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, 0, false, e.Object)
		},
	}
}

// lwsEvents maps a LeaderWorkerSet's events to its serving as h does, at once, but for an update
// that changes only the counts and conditions of its status (ready and updated groups, Available,
// Progressing), which queues the pass after the batch, as a pod's update does: the serving's
// status reads none of them (a group's readiness is its pods' word), and a rollout step or a
// group's restart moved them 26 times per idle recovery and rollout in the harness, each a pass at once beside
// the LWS controller's own. What a pass does read queues it at once: the LeaderWorkerSet made or
// gone, its metadata, spec (its generation), status.observedGeneration (a rollout is done only
// once the LWS controller observed the latest spec) and status.replicas (a Recreate waits for the
// groups to be gone).
func lwsEvents(atOnce, batched handler.EventHandler) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: atOnce.Create,
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if lwsStatusCountsOnly(e.ObjectOld, e.ObjectNew) {
				batched.Update(ctx, e, q)
				return
			}
			atOnce.Update(ctx, e, q)
		},
		DeleteFunc:  atOnce.Delete,
		GenericFunc: atOnce.Generic,
	}
}

// lwsStatusCountsOnly reports whether an update of a LeaderWorkerSet changed nothing a serving's
// pass reads: the same generation, metadata, status.observedGeneration and status.replicas.
func lwsStatusCountsOnly(old, cur client.Object) bool {
	o, ok1 := old.(*lwsv1.LeaderWorkerSet)
	c, ok2 := cur.(*lwsv1.LeaderWorkerSet)
	if !ok1 || !ok2 {
		return false
	}
	return o.Generation == c.Generation && o.UID == c.UID &&
		o.Status.ObservedGeneration == c.Status.ObservedGeneration && o.Status.Replicas == c.Status.Replicas &&
		o.DeletionTimestamp.Equal(c.DeletionTimestamp) &&
		maps.Equal(o.Labels, c.Labels) && maps.Equal(o.Annotations, c.Annotations) &&
		slices.Equal(o.Finalizers, c.Finalizers) && equality.Semantic.DeepEqual(o.OwnerReferences, c.OwnerReferences)
}

// readinessChanged reports whether an update moved a pod into or out of Ready as the serving's
// status counts it (status.ClassifyPod): the serving's readiness may move with it, so its pass is
// not batched (the serving's Ready would otherwise wait for the LeaderWorkerSet's status, one
// write later) and goes before other live servings' (readinessPriority). A pod whose deletion
// begins is the exception: it leaves Ready as the status counts it, but the pods of a group that
// restarts are all deleted within moments, and their deletions queue at once anyway; batched, a
// group's restart is one pass rather than one per pod (runs I and J of session 22: the recovery
// while servings were deleted took a third longer with each at once).
func readinessChanged(old, cur client.Object) bool {
	o, ok1 := old.(*corev1.Pod)
	c, ok2 := cur.(*corev1.Pod)
	return ok1 && ok2 && c.DeletionTimestamp.IsZero() && counted(o) != counted(c)
}

func counted(p *corev1.Pod) bool {
	state, _ := status.ClassifyPod(p)
	return state == status.PodReady
}

// withoutCreateEchoes passes the events of h on but for the creation of an object our own create
// made (at the resourceVersion the create returned): the pass that created it went on knowing it.
// A ControllerRevision's creation queued a pass per new revision that found nothing to do. The
// object's deletion forgets it.
func withoutCreateEchoes(echoes *ownEchoes, h handler.EventHandler) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if !echoes.echo(e.Object) {
				h.Create(ctx, e, q)
			}
		},
		UpdateFunc: h.Update,
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			echoes.forget(client.ObjectKeyFromObject(e.Object))
			h.Delete(ctx, e, q)
		},
		GenericFunc: h.Generic,
	}
}

// ownEchoes remembers, per serving, the resourceVersions its last two writes by this process
// returned (a pass writes at most twice: the finalizer, then the status). The watch event of the
// object at such a resourceVersion is the echo of a write whose pass already went on with what it
// wrote: it queues no pass (it was half the passes of a burst, each reading the serving's
// children again to find nothing to do). Anyone else's write, a status wiped by hand say, has
// another resourceVersion and is news. A process starts with none: every event is news.
type ownEchoes struct{ m sync.Map } // types.NamespacedName -> [2]string

// wrote records the resourceVersion a write of ours returned. The passes of one serving never run
// at once (the work queue's promise), so a load and a store do.
func (o *ownEchoes) wrote(key types.NamespacedName, rv string) {
	if rv == "" {
		return
	}
	last, _ := o.m.Load(key)
	prev, _ := last.([2]string)
	o.m.Store(key, [2]string{rv, prev[0]})
}

// echo reports whether obj is a serving as one of our last writes left it.
func (o *ownEchoes) echo(obj client.Object) bool {
	last, ok := o.m.Load(client.ObjectKeyFromObject(obj))
	if !ok {
		return false
	}
	rvs := last.([2]string)
	rv := obj.GetResourceVersion()
	return rv != "" && (rv == rvs[0] || rv == rvs[1])
}

func (o *ownEchoes) forget(key types.NamespacedName) { o.m.Delete(key) }
