package operator

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrl "sigs.k8s.io/controller-runtime/pkg/reconcile"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/pkg/scheme"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// deletedServing is a serving with our finalizer and its three children (LeaderWorkerSet, Service,
// one revision), as both the API server (live) and the children cache hold them; the serving is
// then deleted on the API server, and withFinalizer, if set, holds the Service there (added after
// the cache's copy). calls counts the requests to the API server, reads those that read a child.
func deletedServing(t *testing.T, withFinalizer string) (r *Reconciler, live client.Client, ms *v1.ModelServing, calls, reads *int) {
	t.Helper()
	ms = fixtures.Serving("qwen", "ns").Obj()
	ms.UID = "uid-1"
	ms.Finalizers = []string{v1.FinalizerChildren}
	owner := []metav1.OwnerReference{{APIVersion: v1.GroupVersion.String(), Kind: "ModelServing", Name: ms.Name, UID: ms.UID,
		Controller: new(true), BlockOwnerDeletion: new(true)}}
	lws := &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen", OwnerReferences: owner}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: naming.ServiceName("qwen"), OwnerReferences: owner}}
	spec, err := revision.SpecOf(ms.Spec)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := revision.NewControllerRevision(ms, spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{lws, svc, rev} {
		o.SetResourceVersion("5")
	}
	children := func() []client.Object { return []client.Object{lws.DeepCopy(), svc.DeepCopy(), rev.DeepCopy()} }
	cache := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(append(children(), ms.DeepCopy())...).Build()
	liveObjs := children()
	if withFinalizer != "" {
		// Added after the cache's copy (a real API server moves the resourceVersion with it).
		liveObjs[1].SetFinalizers([]string{withFinalizer})
		liveObjs[1].SetResourceVersion("6")
	}
	calls, reads = new(int), new(int)
	count := func() { *calls++ }
	live = fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(append(liveObjs, ms.DeepCopy())...).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				count()
				if _, serving := obj.(*v1.ModelServing); !serving {
					*reads++
				}
				return c.Get(ctx, key, obj, opts...)
			},
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				count()
				*reads++
				return c.List(ctx, list, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				count()
				return c.Delete(ctx, obj, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				count()
				return c.Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	if err := live.Delete(context.Background(), ms.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if err := live.Get(context.Background(), client.ObjectKeyFromObject(ms), ms); err != nil {
		t.Fatal(err)
	}
	return &Reconciler{Client: live, Live: live, Children: cache, Clock: clock.RealClock{}}, live, ms, calls, reads
}

// A deleted serving whose children go at once (none waits on a finalizer) is let go in the pass
// that deletes them, whatever the children cache still holds, rather than waiting for the
// deletions' watch events to bring another pass (about 10 passes a deleted serving, one per event
// of its children and pods). With every child deleted at the version the cache holds, without a
// finalizer, and none made by this process missing from the cache, it reads nothing from the API
// server: three deletions and the finalizer's removal.
func TestADeletedServingGoesInThePassThatDeletesItsChildren(t *testing.T) {
	r, live, ms, calls, reads := deletedServing(t, "")
	ctx := context.Background()
	res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ms)})
	if err != nil {
		t.Fatal(err)
	}
	if *reads != 0 {
		t.Errorf("the pass read %d children from the API server; want none", *reads)
	}
	if res.RequeueAfter != 0 {
		t.Errorf("the pass asks to look again in %s; want the serving let go in this pass", res.RequeueAfter)
	}
	if err := live.Get(ctx, client.ObjectKeyFromObject(ms), &v1.ModelServing{}); !apierrors.IsNotFound(err) {
		t.Errorf("the serving is still there after the pass (err %v); want it gone", err)
	}
	for _, child := range []client.Object{&lwsv1.LeaderWorkerSet{}, &corev1.Service{}} {
		name := "qwen"
		if _, ok := child.(*corev1.Service); ok {
			name = naming.ServiceName("qwen")
		}
		if err := live.Get(ctx, types.NamespacedName{Namespace: "ns", Name: name}, child); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s still there (err %v)", child, name, err)
		}
	}
	// A pass queued by an event of its children before the cache saw the serving go finds it
	// as it was (deleted, our finalizer on): it asks the API server nothing more.
	before := *calls
	if res, err := r.finalize(ctx, ms.DeepCopy()); err != nil || res.RequeueAfter != 0 {
		t.Errorf("a pass over the serving as the cache still held it: %v, requeue %s", err, res.RequeueAfter)
	}
	if n := *calls - before; n != 0 {
		t.Errorf("that pass made %d requests; want none", n)
	}
}

// A child that waits on a finalizer keeps the serving: the pass deletes it and looks again later.
func TestADeletedServingWaitsForAChildHeldByAFinalizer(t *testing.T) {
	r, live, ms, _, _ := deletedServing(t, "test.kubectl-llm.dev/hold")
	ctx := context.Background()
	res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ms)})
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter == 0 {
		t.Error("the pass let the serving go while its Service is still there")
	}
	held := &v1.ModelServing{}
	if err := live.Get(ctx, client.ObjectKeyFromObject(ms), held); err != nil {
		t.Fatalf("the serving went while its Service is held: %v", err)
	}
	svc := &corev1.Service{}
	if err := live.Get(ctx, types.NamespacedName{Namespace: "ns", Name: naming.ServiceName("qwen")}, svc); err != nil || svc.DeletionTimestamp.IsZero() {
		t.Errorf("the held Service: %v, deletionTimestamp %v; want it being deleted", err, svc.DeletionTimestamp)
	}
}

// A child this process made that the children cache has not seen yet (its creation's event still
// on its way) is read from the API server: the pass deletes it there and keeps the serving until
// it is gone. Once the cache holds what was made, nothing is left to read.
func TestADeletedServingWaitsForAChildTheCacheHasNotSeen(t *testing.T) {
	r, live, ms, _, reads := deletedServing(t, "")
	ctx := context.Background()
	key := client.ObjectKeyFromObject(ms)
	made := &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen-decode", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: v1.GroupVersion.String(), Kind: "ModelServing", Name: ms.Name, UID: ms.UID, Controller: new(true)}}}}
	if err := live.Create(ctx, made); err != nil {
		t.Fatal(err)
	}
	r.unseen.made(key, childKey{"LeaderWorkerSet", client.ObjectKeyFromObject(made)})
	ms.Spec.Roles = []v1.RoleSpec{{Name: "decode"}} // so that the serving's children include it
	if _, err := r.finalize(ctx, ms); err != nil {
		t.Fatal(err)
	}
	if *reads == 0 {
		t.Error("the pass read nothing from the API server with a child made and not yet in the cache")
	}
	if err := live.Get(ctx, client.ObjectKeyFromObject(made), &lwsv1.LeaderWorkerSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("the child the cache had not seen is still there (err %v); want it deleted", err)
	}
	if err := live.Get(ctx, key, &v1.ModelServing{}); err != nil {
		t.Errorf("the serving went in the pass that found a child the cache had not seen (err %v); want it kept until the next", err)
	}
	if r.unseen.any(ctx, key, r.Children) {
		t.Error("the deleted child is still remembered as made and unseen")
	}
}
