package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/operator"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// holdFinalizer keeps a deleted serving on the API server after the operator lets it go, as the
// garbage collector's orphan finalizer does for a moment in a real cluster (envtest has no
// garbage collector: here the orphan finalizer stays, and the test releases the children itself).
const holdFinalizer = "test.kubectl-llm.dev/hold"

// orphanedServing makes a converged serving with the hold finalizer and returns it as a pass
// would have read it before `kubectl delete --cascade=orphan`.
func orphanedServing(t *testing.T, ns, name string) *v1.ModelServing {
	t.Helper()
	ms := serving(ns, name)
	ms.Finalizers = []string{holdFinalizer}
	if err := env.Client.Create(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropFinalizers(ns, name) })
	return waitConverged(t, ns, name)
}

func dropFinalizers(ns, name string) {
	ms := &v1.ModelServing{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, ms); err != nil {
		return
	}
	patch := client.MergeFrom(ms.DeepCopy())
	ms.Finalizers = nil
	_ = env.Client.Patch(context.Background(), ms, patch)
}

// childrenOf are the serving's LWS, Service and ControllerRevisions as the API server has them.
func childrenOf(t *testing.T, ns, name string) []client.Object {
	t.Helper()
	ctx := context.Background()
	lws, svc := &lwsv1.LeaderWorkerSet{}, &corev1.Service{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, lws); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.ServiceName(name)}, svc); err != nil {
		t.Fatal(err)
	}
	revs := &appsv1.ControllerRevisionList{}
	if err := env.Client.List(ctx, revs, revision.ListOptions(ns, name)...); err != nil {
		t.Fatal(err)
	}
	out := []client.Object{lws, svc}
	for i := range revs.Items {
		out = append(out, &revs.Items[i])
	}
	if len(revs.Items) == 0 {
		t.Fatal("the serving has no ControllerRevision")
	}
	return out
}

// orphanDelete deletes the serving with --cascade=orphan and releases its children as the
// garbage collector does, waiting until every child has no controller.
func orphanDelete(t *testing.T, ms *v1.ModelServing) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Delete(ctx, ms, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
		t.Fatal(err)
	}
	for _, child := range childrenOf(t, ms.Namespace, ms.Name) {
		if metav1.GetControllerOf(child) == nil {
			continue // the operator's finalize released it already
		}
		patch := client.MergeFrom(child.DeepCopyObject().(client.Object))
		child.SetOwnerReferences(nil)
		if err := env.Client.Patch(ctx, child, patch); err != nil {
			t.Fatalf("release %s: %v", child.GetName(), err)
		}
	}
}

// watchClient is a client of its own, as the interceptor wraps one.
func watchClient(t *testing.T) client.WithWatch {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkReleased fails for every child of the serving that has a controller.
func checkReleased(t *testing.T, ns, name string) {
	t.Helper()
	for _, child := range childrenOf(t, ns, name) {
		if ref := metav1.GetControllerOf(child); ref != nil {
			t.Errorf("%T %s was given back to %s %s (uid %s) after its release: a plain deletion would now delete it",
				child, child.GetName(), ref.Kind, ref.Name, ref.UID)
		}
	}
}

// The after-adopt fault case: `kubectl delete --cascade=orphan` right after an operator start.
// A pass that read the serving from a cache still behind the deletion must not give the
// children the garbage collector has released back to it.
func TestAPassOnAStaleServingDoesNotReownOrphanedChildren(t *testing.T) {
	ctx := context.Background()

	t.Run("the cache is behind the deletion and the release", func(t *testing.T) {
		ns := namespace(t)
		stale := orphanedServing(t, ns, "kr")
		orphanDelete(t, stale)
		// The pass reads the serving as it was before the deletion; everything else is live, so
		// it finds the released children without a controller, with our labels: adoptable.
		c := interceptor.NewClient(watchClient(t), interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
				if ms, ok := o.(*v1.ModelServing); ok && key.Name == stale.Name {
					stale.DeepCopyInto(ms)
					return nil
				}
				return c.Get(ctx, key, o, opts...)
			},
		})
		r := &operator.Reconciler{Client: c, Live: env.Client, Scheme: env.Scheme, Clock: clock.RealClock{}}
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(stale)}); err != nil {
			t.Fatalf("the pass failed: %v", err)
		}
		checkReleased(t, ns, "kr")
	})

	t.Run("the deletion and the release land between the check and the apply", func(t *testing.T) {
		ns := namespace(t)
		ms := orphanedServing(t, ns, "kr")
		// The pass reads everything live; right before its first apply (a new reconciler applies
		// the LWS and the Service once) the serving is deleted and its children released: after
		// anything the pass asked, before what it writes.
		deleted := false
		c := interceptor.NewClient(watchClient(t), interceptor.Funcs{
			Apply: func(ctx context.Context, c client.WithWatch, o runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
				if !deleted {
					deleted = true
					orphanDelete(t, ms)
				}
				return c.Apply(ctx, o, opts...)
			},
		})
		r := &operator.Reconciler{Client: c, Live: env.Client, Scheme: env.Scheme, Clock: clock.RealClock{}}
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ms)})
		if err != nil {
			t.Fatalf("the pass failed: %v", err)
		}
		if !deleted {
			t.Fatal("the pass applied nothing: the case did not happen")
		}
		if res.RequeueAfter == 0 || res.RequeueAfter > time.Second {
			t.Errorf("the pass whose write was refused looks again after %v, want soon", res.RequeueAfter)
		}
		checkReleased(t, ns, "kr")
		// Nothing about the refused write reached the status: it was not a failure.
		got := &v1.ModelServing{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ms), got); err != nil {
			t.Fatal(err)
		}
		for _, c := range got.Status.Conditions {
			if c.Reason == v1.ReasonApplyFailed {
				t.Errorf("the refused write was reported: %s: %s", c.Type, c.Message)
			}
		}
	})
}

// A rollout's pass records its revision right after the LeaderWorkerSet's apply, and a later pass
// prunes the records beyond the history limit: neither asks the API server whether the serving
// is live first (a record's create gives no released child back, and a prune deletes at the
// resourceVersion it read), so neither reads the serving.
func TestARolloutAndThePruneAfterItDoNotReadTheirServing(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := env.Client.Create(ctx, serving(ns, "ro")); err != nil {
		t.Fatal(err)
	}
	prev := waitServing(t, ns, "ro", "convergence", func(ms *v1.ModelServing) bool {
		return ms.Status.ObservedGeneration == ms.Generation && ms.Status.UpdateRevision != ""
	}).Status.UpdateRevision
	w := primaryRequests
	w.watch(t, ns)
	// One rollout more than the history holds: the last is followed by a prune.
	for i := 1; i <= operator.DefaultHistoryLimit; i++ {
		prev = rollOutImage(t, ns, "ro", fmt.Sprintf("vllm/vllm-openai:v0.%d.0", 30+i), prev)
	}
	testenv.Eventually(t, 20*time.Second, "the prune to the history limit", func() (bool, error) {
		list := &appsv1.ControllerRevisionList{}
		if err := env.Client.List(ctx, list, revision.ListOptions(ns, "ro")...); err != nil {
			return false, err
		}
		return len(list.Items) <= operator.DefaultHistoryLimit, fmt.Errorf("%d revisions", len(list.Items))
	})
	sent := w.requests()
	servingPath := "/apis/" + v1.GroupVersion.Group + "/" + v1.GroupVersion.Version + "/namespaces/" + ns + "/modelservings/ro"
	if n := countOf(sent, "GET "+servingPath); n != 0 {
		t.Errorf("the serving was read %d times from the API server in %d rollouts and their prune, want none\n%s",
			n, operator.DefaultHistoryLimit, strings.Join(sent, "\n"))
	}
	pruned := 0
	for _, r := range sent {
		if strings.HasPrefix(r, "DELETE /apis/apps/v1/namespaces/"+ns+"/controllerrevisions/") {
			pruned++
		}
	}
	if pruned == 0 {
		t.Fatalf("no revision was pruned: the case did not happen\n%s", strings.Join(sent, "\n"))
	}
}

// The prune asks nothing of the serving: a revision record the garbage collector released (the
// serving deleted with --cascade=orphan) between the pass's read and its delete is kept, as the
// user asked.
func TestAPruneLeavesARevisionReleasedSinceThePassReadIt(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ms := orphanedServing(t, ns, "kp")
	prev := ms.Status.UpdateRevision
	for i := 1; i <= 2; i++ {
		prev = rollOutImage(t, ns, "kp", fmt.Sprintf("vllm/vllm-openai:v0.%d.0", 40+i), prev)
	}
	ms = waitServing(t, ns, "kp", "the serving as a pass reads it", func(*v1.ModelServing) bool { return true })
	before := len(childrenOf(t, ns, "kp")) - 2
	// A pass that keeps one revision: right before its first delete of a record, the serving is
	// deleted with --cascade=orphan and its children released.
	var tried []string
	c := interceptor.NewClient(watchClient(t), interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			if _, ok := o.(*appsv1.ControllerRevision); ok {
				if len(tried) == 0 {
					orphanDelete(t, ms)
				}
				tried = append(tried, o.GetName())
			}
			return c.Delete(ctx, o, opts...)
		},
	})
	r := &operator.Reconciler{Client: c, Live: env.Client, Scheme: env.Scheme, Clock: clock.RealClock{}, HistoryLimit: 1}
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ms)}); err != nil {
		t.Fatalf("the pass failed: %v", err)
	}
	if len(tried) == 0 {
		t.Fatal("the pass pruned nothing: the case did not happen")
	}
	if after := len(childrenOf(t, ns, "kp")) - 2; after != before {
		t.Errorf("%d revisions left of %d: the pass deleted released ones (it tried %v)", after, before, tried)
	}
	checkReleased(t, ns, "kp")
}

// rollOutImage sets the serving's engine image and waits until the operator has recorded a new
// update revision (other than prev) for it; it returns that revision.
func rollOutImage(t *testing.T, ns, name, image, prev string) string {
	t.Helper()
	updateServing(t, ns, name, func(ms *v1.ModelServing) { ms.Spec.Engine.Image = image })
	return waitServing(t, ns, name, "the rollout to "+image+" recorded", func(ms *v1.ModelServing) bool {
		return ms.Status.ObservedGeneration == ms.Generation && ms.Status.UpdateRevision != prev
	}).Status.UpdateRevision
}
