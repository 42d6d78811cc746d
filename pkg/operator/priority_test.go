package operator

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/scheme"
)

func podOf(serving string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: serving + "-0", Labels: map[string]string{v1.LabelName: serving}}}
}

func byLabel(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetLabels()[v1.LabelName]}}}
}

// order drains the queue: the servings in the order the workers get them, with their priorities.
func order(t *testing.T, q priorityqueue.PriorityQueue[reconcile.Request], n int) ([]string, []int) {
	t.Helper()
	var names []string
	var prios []int
	for range n {
		req, prio, shutdown := q.GetWithPriority()
		if shutdown {
			t.Fatal("queue shut down")
		}
		names, prios = append(names, req.Name), append(prios, prio)
		q.Done(req)
	}
	return names, prios
}

// A pod event of a serving being deleted (a namespace deleted with hundreds in it) is queued
// behind one of a live serving, even when it came first; one of a serving that is gone queues
// nothing (its pods go on changing for seconds after it).
func TestPodEventsOfServingsGoingAwayWaitBehindLiveOnes(t *testing.T) {
	now := metav1.NewTime(time.Now())
	deleting := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "deleting", DeletionTimestamp: &now, Finalizers: []string{v1.FinalizerChildren}}}
	liveOne := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "live"}}
	cache := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(deleting, liveOne).Build()
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	h := mappedToServing(cache, 0, byLabel)
	ctx := context.Background()
	h.Delete(ctx, event.DeleteEvent{Object: podOf("deleting")}, q)
	h.Delete(ctx, event.DeleteEvent{Object: podOf("gone")}, q) // no such serving any more
	h.Delete(ctx, event.DeleteEvent{Object: podOf("live")}, q)
	if n := q.Len(); n != 2 {
		t.Fatalf("%d servings queued, want 2: the deleted one and the live one, not the one that is gone", n)
	}
	names, prios := order(t, q, 2)
	if names[0] != "live" || prios[0] != 0 || names[1] != "deleting" || prios[1] != bulkPriority {
		t.Fatalf("order %v at %v, want [live deleting] at [0 %d]", names, prios, bulkPriority)
	}
}

// A namespace deleted with servings in it loses their pods and children before the servings' own
// deletion reaches them: those events queue nothing (the serving's pass would only wait for its
// own deletion, whose event queues it, and a deleted serving there lets go at once), so that a
// namespace of hundreds going makes no pass per pod event, while a live serving's are queued.
func TestEventsOfAServingInANamespaceBeingDeletedQueueNothing(t *testing.T) {
	now := metav1.NewTime(time.Now())
	going := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "going", DeletionTimestamp: &now, Finalizers: []string{"kubernetes"}}}
	staying := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}
	inGoing := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "going", Name: "a"}}
	deletedInGoing := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "going", Name: "b", DeletionTimestamp: &now, Finalizers: []string{v1.FinalizerChildren}}}
	liveOne := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "live"}}
	cache := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(going, staying, inGoing, deletedInGoing, liveOne).Build()
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	h := mappedToServing(cache, 0, byLabel)
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		pod := podOf(name)
		pod.Namespace = "going"
		h.Delete(ctx, event.DeleteEvent{Object: pod}, q)
		h.Update(ctx, event.UpdateEvent{ObjectOld: pod, ObjectNew: pod}, q)
	}
	h.Delete(ctx, event.DeleteEvent{Object: podOf("live")}, q)
	if n := q.Len(); n != 1 {
		t.Fatalf("%d servings queued, want 1: the live one, none of the namespace being deleted", n)
	}
	if names, _ := order(t, q, 1); names[0] != "live" {
		t.Errorf("queued %v, want [live]", names)
	}
	// The serving's own events still queue it: its deletion is what its finalizer's pass needs.
	servingEvents(func(client.Object) bool { return false }).Update(ctx, event.UpdateEvent{ObjectOld: inGoing, ObjectNew: deletedInGoing}, q)
	if n := q.Len(); n != 1 {
		t.Errorf("the deletion of a serving in a namespace being deleted queued %d passes, want 1", n)
	}
	if namespaceDeleted(ctx, cache, "missing") || namespaceDeleted(ctx, nil, "going") || !namespaceDeleted(ctx, cache, "going") {
		t.Error("namespaceDeleted: want true only for the namespace being deleted, false for one not held and without a reader")
	}
}

// A namespace whose deletion begins queues each of its servings once, at the bulk priority (their
// passes take the finalizers off before the namespace controller gets to them); any other update
// of a namespace, and a namespace's creation or deletion, queue nothing.
func TestANamespaceWhoseDeletionBeginsQueuesItsServings(t *testing.T) {
	now := metav1.NewTime(time.Now())
	cache := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		&v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "going", Name: "a"}},
		&v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "going", Name: "b"}},
		&v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "staying", Name: "c"}},
	).Build()
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	h := namespaceEvents(cache)
	ctx := context.Background()
	ns := func(name string, deleted bool) *metav1.PartialObjectMetadata {
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if deleted {
			o.DeletionTimestamp = &now
		}
		return o
	}
	h.Update(ctx, event.UpdateEvent{ObjectOld: ns("staying", false), ObjectNew: ns("staying", false)}, q)
	h.Create(ctx, event.CreateEvent{Object: ns("going", true)}, q)
	h.Delete(ctx, event.DeleteEvent{Object: ns("going", true)}, q)
	if n := q.Len(); n != 0 {
		t.Fatalf("%d servings queued by a label change, a creation and a deletion of namespaces, want 0", n)
	}
	h.Update(ctx, event.UpdateEvent{ObjectOld: ns("going", false), ObjectNew: ns("going", true)}, q)
	h.Update(ctx, event.UpdateEvent{ObjectOld: ns("going", true), ObjectNew: ns("going", true)}, q) // its status, say
	if n := q.Len(); n != 2 {
		t.Fatalf("%d servings queued, want 2: those of the namespace whose deletion began", n)
	}
	names, prios := order(t, q, 2)
	if names[0]+names[1] != "ab" && names[0]+names[1] != "ba" || prios[0] != bulkPriority || prios[1] != bulkPriority {
		t.Errorf("queued %v at %v, want a and b at the bulk priority %d", names, prios, bulkPriority)
	}
}

// An update that marks the serving deleted is queued at the bulk priority; any other update of a
// serving at the default one.
func TestServingEventsOfADeletedServingAreBulk(t *testing.T) {
	now := metav1.NewTime(time.Now())
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	h := servingEvents((&ownEchoes{}).echo)
	ctx := context.Background()
	old := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "1"}}
	marked := old.DeepCopy()
	marked.ResourceVersion, marked.DeletionTimestamp = "2", &now
	h.Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: marked}, q)
	edited := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", ResourceVersion: "2"}}
	h.Update(ctx, event.UpdateEvent{ObjectOld: &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", ResourceVersion: "1"}}, ObjectNew: edited}, q)
	names, prios := order(t, q, 2)
	if names[0] != "b" || prios[0] != 0 || names[1] != "a" || prios[1] != bulkPriority {
		t.Fatalf("order %v at %v, want [b a] at [0 %d]", names, prios, bulkPriority)
	}
}

// The update event of a serving as our own write left it (its finalizer, its status) queues no
// pass; an update by anyone else, a status wiped by hand at another resourceVersion, does, and so
// does one of a serving this process never wrote.
func TestTheEchoOfOurOwnWriteQueuesNoPass(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	var echoes ownEchoes
	h := servingEvents(echoes.echo)
	ctx := context.Background()
	at := func(name, rv string) *v1.ModelServing {
		return &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	echoes.wrote(key, "11") // the finalizer
	echoes.wrote(key, "12") // the status, in the same pass
	h.Update(ctx, event.UpdateEvent{ObjectOld: at("a", "10"), ObjectNew: at("a", "11")}, q)
	h.Update(ctx, event.UpdateEvent{ObjectOld: at("a", "11"), ObjectNew: at("a", "12")}, q)
	if n := q.Len(); n != 0 {
		t.Fatalf("%d passes queued for the echoes of our own two writes, want none", n)
	}
	h.Update(ctx, event.UpdateEvent{ObjectOld: at("a", "12"), ObjectNew: at("a", "13")}, q) // someone else's
	h.Update(ctx, event.UpdateEvent{ObjectOld: at("b", "12"), ObjectNew: at("b", "12")}, q) // never written by us
	names, _ := order(t, q, 2)
	if names[0] != "a" || names[1] != "b" {
		t.Fatalf("passes %v, want [a b]", names)
	}
	echoes.wrote(key, "14")
	echoes.wrote(key, "15")
	h.Update(ctx, event.UpdateEvent{ObjectOld: at("a", "10"), ObjectNew: at("a", "12")}, q) // older than the last two
	if n := q.Len(); n != 1 {
		t.Fatalf("%d passes queued for a write older than our last two, want 1", n)
	}
	order(t, q, 1)
	h.Update(ctx, event.UpdateEvent{ObjectOld: at("a", "14"), ObjectNew: at("a", "15")}, q)
	if n := q.Len(); n != 0 {
		t.Fatalf("%d passes queued for the echo of our last write, want none", n)
	}
	echoes.forget(key)
	h.Update(ctx, event.UpdateEvent{ObjectOld: at("a", "14"), ObjectNew: at("a", "15")}, q) // forgotten: news again
	if n := q.Len(); n != 1 {
		t.Fatalf("%d passes queued once forgotten, want 1", n)
	}
}

// The creation of a ControllerRevision our own create made (its resourceVersion the one the create
// returned) queues no pass; anyone else's, an update and a deletion do, and the deletion forgets it.
func TestOurOwnRevisionCreateQueuesNoPass(t *testing.T) {
	live := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen"}}
	cache := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(live).Build()
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	var echoes ownEchoes
	h := withoutCreateEchoes(&echoes, mappedToServing(cache, 0, byLabel))
	rev := func(name, rv string) client.Object {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv, Labels: map[string]string{v1.LabelName: "qwen"}}}
	}
	ctx := context.Background()
	echoes.wrote(types.NamespacedName{Namespace: "ns", Name: "qwen-abc"}, "7")

	queued := func(what string, want int) {
		t.Helper()
		if n := q.Len(); n != want {
			t.Fatalf("%s queued %d passes, want %d", what, n, want)
		}
		order(t, q, want)
	}
	h.Create(ctx, event.CreateEvent{Object: rev("qwen-abc", "7")}, q)
	queued("our own create", 0)
	h.Create(ctx, event.CreateEvent{Object: rev("qwen-def", "9")}, q) // made by someone else
	queued("someone else's create", 1)
	h.Update(ctx, event.UpdateEvent{ObjectOld: rev("qwen-abc", "7"), ObjectNew: rev("qwen-abc", "8")}, q)
	queued("an update", 1)
	h.Delete(ctx, event.DeleteEvent{Object: rev("qwen-abc", "8")}, q)
	queued("a deletion", 1)
	if echoes.echo(rev("qwen-abc", "7")) {
		t.Error("the deleted revision is still remembered")
	}
}

// A pod's creation and updates queue their serving's pass after the batch, all of them one pass;
// a pod's deletion, its turning Ready or not Ready, and any event queued without a delay (the
// LeaderWorkerSet's, the serving's), make the pass due at once, the waiting one with it.
func TestAGroupsPodEventsWithinTheBatchAreOnePass(t *testing.T) {
	live := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "live"}}
	cache := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(live).Build()
	ctx := context.Background()
	events := func(h handler.EventHandler, q priorityqueue.PriorityQueue[reconcile.Request]) {
		pod := podOf("live")
		h.Create(ctx, event.CreateEvent{Object: pod}, q)
		for range 5 { // scheduled, started, ready...
			h.Update(ctx, event.UpdateEvent{ObjectOld: pod, ObjectNew: pod}, q)
		}
	}

	// A batch longer than the test: nothing is due until an event without a delay comes.
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	h := mappedToServing(cache, time.Hour, byLabel)
	events(h, q)
	if n := q.Len(); n != 0 {
		t.Fatalf("%d passes due at once for a pod's creation and updates, want 0 before the batch ends", n)
	}
	h.Delete(ctx, event.DeleteEvent{Object: podOf("live")}, q)
	if n := q.Len(); n != 1 {
		t.Fatalf("%d passes due after a pod's deletion, want 1 at once", n)
	}
	order(t, q, 1)
	events(h, q)
	servingEvents((&ownEchoes{}).echo).Update(ctx, event.UpdateEvent{ObjectOld: live, ObjectNew: live}, q)
	if n := q.Len(); n != 1 {
		t.Fatalf("%d passes due after an event without a delay, want the waiting one, due at once", n)
	}
	order(t, q, 1)
	notReady := podOf("live")
	ready := notReady.DeepCopy()
	ready.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	h.Update(ctx, event.UpdateEvent{ObjectOld: notReady, ObjectNew: ready}, q)
	if n := q.Len(); n != 1 {
		t.Fatalf("%d passes due after a pod turned Ready, want 1 at once", n)
	}
	order(t, q, 1)
	h.Update(ctx, event.UpdateEvent{ObjectOld: ready, ObjectNew: notReady}, q)
	if n := q.Len(); n != 1 {
		t.Fatalf("%d passes due after a pod turned not Ready, want 1 at once", n)
	}
	order(t, q, 1)
	// A Ready pod whose deletion begins leaves Ready as the status counts it, but is batched: a
	// group that restarts has all its pods deleted within moments, and the deletions themselves
	// queue at once. (Each at once cost the recovery while servings were deleted a third more
	// time in two runs of the scale harness.)
	terminating := ready.DeepCopy()
	now := metav1.Now()
	terminating.DeletionTimestamp = &now
	h.Update(ctx, event.UpdateEvent{ObjectOld: ready, ObjectNew: terminating}, q)
	if n := q.Len(); n != 0 {
		t.Fatalf("%d passes due at once after a Ready pod's deletion began, want 0 before the batch ends", n)
	}

	// A short batch: the six events are one pass once it ends, and no second one follows.
	q2 := priorityqueue.New[reconcile.Request]("test")
	defer q2.ShutDown()
	events(mappedToServing(cache, 20*time.Millisecond, byLabel), q2)
	deadline := time.Now().Add(10 * time.Second)
	for q2.Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	order(t, q2, 1)
	time.Sleep(100 * time.Millisecond)
	if n := q2.Len(); n != 0 {
		t.Fatalf("%d more passes after the batch's one, want none", n)
	}
}

// A LeaderWorkerSet's update that moves only its status's counts and conditions queues its
// serving after the batch, as a pod's update does; whatever a serving's pass reads of it queues at
// once, as do its creation and deletion.
func TestALeaderWorkerSetsStatusCountsAreBatched(t *testing.T) {
	live := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "live"}}
	cache := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(live).Build()
	ctx := context.Background()
	h := lwsEvents(mappedToServing(cache, 0, byLabel), mappedToServing(cache, time.Hour, byLabel))
	base := &lwsv1.LeaderWorkerSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "live", Labels: map[string]string{v1.LabelName: "live"}, Generation: 2, UID: "u1"},
		Status:     lwsv1.LeaderWorkerSetStatus{ObservedGeneration: 2, Replicas: 4, ReadyReplicas: 4, UpdatedReplicas: 4},
	}
	for _, c := range []struct {
		name   string
		change func(*lwsv1.LeaderWorkerSet)
		batch  bool
	}{
		{"a group's readiness", func(l *lwsv1.LeaderWorkerSet) { l.Status.ReadyReplicas = 3 }, true},
		{"a group updated", func(l *lwsv1.LeaderWorkerSet) { l.Status.UpdatedReplicas = 3 }, true},
		{"a condition", func(l *lwsv1.LeaderWorkerSet) {
			l.Status.Conditions = []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "GroupsProgressing"}}
		}, true},
		{"the status observing the spec", func(l *lwsv1.LeaderWorkerSet) { l.Status.ObservedGeneration = 1 }, false},
		{"the groups that exist", func(l *lwsv1.LeaderWorkerSet) { l.Status.Replicas = 3 }, false},
		{"the spec (its generation)", func(l *lwsv1.LeaderWorkerSet) { l.Generation = 3 }, false},
		{"a label", func(l *lwsv1.LeaderWorkerSet) { l.Labels = map[string]string{v1.LabelName: "live", "x": "y"} }, false},
		{"an annotation", func(l *lwsv1.LeaderWorkerSet) { l.Annotations = map[string]string{"x": "y"} }, false},
		{"its owner", func(l *lwsv1.LeaderWorkerSet) {
			l.OwnerReferences = []metav1.OwnerReference{{Kind: "ModelServing", Name: "live", UID: "s1"}}
		}, false},
		{"its deletion", func(l *lwsv1.LeaderWorkerSet) { now := metav1.Now(); l.DeletionTimestamp = &now }, false},
		{"a finalizer", func(l *lwsv1.LeaderWorkerSet) { l.Finalizers = []string{"x"} }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := priorityqueue.New[reconcile.Request]("test")
			defer q.ShutDown()
			cur := base.DeepCopy()
			c.change(cur)
			h.Update(ctx, event.UpdateEvent{ObjectOld: base, ObjectNew: cur}, q)
			if n, want := q.Len(), map[bool]int{true: 0, false: 1}[c.batch]; n != want {
				t.Errorf("%d passes due at once, want %d (batched: %v)", n, want, c.batch)
			}
		})
	}
	for name, ev := range map[string]func(q workqueue.TypedRateLimitingInterface[reconcile.Request]){
		"created": func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(ctx, event.CreateEvent{Object: base}, q)
		},
		"deleted": func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(ctx, event.DeleteEvent{Object: base}, q)
		},
	} {
		q := priorityqueue.New[reconcile.Request]("test")
		ev(q)
		if n := q.Len(); n != 1 {
			t.Errorf("%s: %d passes due at once, want 1", name, n)
		}
		q.ShutDown()
	}
}

// A pass that may move a serving's readiness (a pod into or out of Ready, its Service made or
// gone) goes before the passes other live servings queued earlier, as a serving's creation does;
// one of a serving going away stays bulk.
func TestAPassThatMayMoveReadinessGoesFirst(t *testing.T) {
	now := metav1.NewTime(time.Now())
	servings := []client.Object{
		&v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "busy"}},
		&v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-ready"}},
		&v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-unready"}},
		&v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "service-made"}},
		&v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "service-gone"}},
		&v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "deleting", DeletionTimestamp: &now, Finalizers: []string{v1.FinalizerChildren}}},
	}
	cache := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(servings...).Build()
	ctx := context.Background()
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	pods := mappedToServing(cache, 0, byLabel)
	services := serviceToServing(cache, byLabel)
	serviceOf := func(serving string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: serving, Labels: map[string]string{v1.LabelName: serving}}}
	}
	readyPod := func(serving string) *corev1.Pod {
		p := podOf(serving)
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		return p
	}
	// An update's new object has another resourceVersion (one with the same is a resync, which
	// controller-runtime queues at its low priority).
	newer := func(o client.Object) client.Object {
		o.SetResourceVersion("2")
		return o
	}

	servingEvents((&ownEchoes{}).echo).Create(ctx, event.CreateEvent{Object: servings[0]}, q)
	pods.Update(ctx, event.UpdateEvent{ObjectOld: podOf("busy"), ObjectNew: newer(podOf("busy"))}, q)
	services.Update(ctx, event.UpdateEvent{ObjectOld: serviceOf("busy"), ObjectNew: newer(serviceOf("busy"))}, q)
	pods.Update(ctx, event.UpdateEvent{ObjectOld: podOf("pod-ready"), ObjectNew: newer(readyPod("pod-ready"))}, q)
	pods.Update(ctx, event.UpdateEvent{ObjectOld: readyPod("pod-unready"), ObjectNew: newer(podOf("pod-unready"))}, q)
	services.Create(ctx, event.CreateEvent{Object: serviceOf("service-made")}, q)
	services.Delete(ctx, event.DeleteEvent{Object: serviceOf("service-gone")}, q)
	services.Create(ctx, event.CreateEvent{Object: serviceOf("deleting")}, q)

	names, prios := order(t, q, 6)
	for i, want := range []string{"pod-ready", "pod-unready", "service-made", "service-gone"} {
		if names[i] != want || prios[i] != readinessPriority {
			t.Fatalf("order %v at %v, want the four passes that may move readiness first, at %d, in the order they came", names, prios, readinessPriority)
		}
	}
	if names[4] != "busy" || prios[4] != 0 || names[5] != "deleting" || prios[5] != bulkPriority {
		t.Fatalf("order %v at %v, want busy at 0 then deleting at %d last", names, prios, bulkPriority)
	}

	// A pass already queued at the default priority is raised by an event that may move its
	// serving's readiness.
	pods.Update(ctx, event.UpdateEvent{ObjectOld: podOf("busy"), ObjectNew: newer(podOf("busy"))}, q)
	pods.Update(ctx, event.UpdateEvent{ObjectOld: podOf("pod-ready"), ObjectNew: newer(podOf("pod-ready"))}, q)
	services.Create(ctx, event.CreateEvent{Object: serviceOf("pod-ready")}, q)
	names, prios = order(t, q, 2)
	if names[0] != "pod-ready" || prios[0] != readinessPriority || names[1] != "busy" {
		t.Fatalf("order %v at %v, want pod-ready raised to %d ahead of busy", names, prios, readinessPriority)
	}
}
