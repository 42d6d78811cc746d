package operator_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// Groups whose pods are made and turn ready within the detail interval are not a status write of
// their own: the groups appearing (made, on the update revision, their pods' reasons) is detail, held
// back for the interval, and goes out with their readiness. In a burst of servings on the
// simulated cluster that intermediate write was one status write in three.
func TestGroupsMadeAndReadyWithinTheIntervalAreOneStatusWrite(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := env.Client.Create(ctx, serving(ns, "qwen")); err != nil {
		t.Fatal(err)
	}
	first := waitServing(t, ns, "qwen", "the first status, before any pod", func(ms *v1.ModelServing) bool {
		return ms.Status.ObservedGeneration == ms.Generation && len(ms.Status.Groups) == 2
	})
	if first.Status.Replicas != 0 {
		t.Fatalf("the first status counts %d groups made, want 0 (no pod yet)", first.Status.Replicas)
	}
	// Past the interval since that write, so that pacing by the last write alone would write the
	// groups appearing at once.
	time.Sleep(1200 * time.Millisecond)
	w, err := watchClient(t).Watch(ctx, &v1.ModelServingList{}, client.InNamespace(ns),
		client.MatchingFields{"metadata.name": "qwen"}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: first.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	labels := map[string]string{v1.LabelName: "qwen", v1.LabelRevision: first.Status.UpdateRevision}
	for g := range 2 {
		createGroupPods(t, ns, "qwen", g, labels, nil, false, time.Now())
	}
	time.Sleep(300 * time.Millisecond) // the manager's pass sees the pods made, not ready
	markPodsReady(t, ns, client.MatchingLabels{v1.LabelName: "qwen"})

	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch ended")
			}
			if ev.Type != watch.Modified {
				continue
			}
			st := ev.Object.(*v1.ModelServing).Status
			if st.ReadyReplicas == 2 {
				if st.Replicas != 2 || st.UpdatedReplicas != 2 {
					t.Errorf("the ready groups' status counts %d made, %d updated; want 2 and 2", st.Replicas, st.UpdatedReplicas)
				}
				return
			}
			// Group 0 turning ready before group 1 (their pods are marked one after the other) is
			// a write of its own; the groups being made, with none ready, is not.
			if st.ReadyReplicas == 0 && st.Replicas != first.Status.Replicas {
				t.Errorf("a status was written for the groups made (%d made, none ready) before they turned ready a moment later: want it written with their readiness\n%+v", st.Replicas, st)
			}
		case <-deadline:
			t.Fatal("no status with both groups ready within 20 s")
		}
	}
}

// Detail that nothing more follows is written one interval after it appeared: pods that stay
// loading show in the status.
func TestGroupsMadeAreWrittenAfterTheInterval(t *testing.T) {
	ns := namespace(t)
	if err := env.Client.Create(context.Background(), serving(ns, "qwen")); err != nil {
		t.Fatal(err)
	}
	first := waitServing(t, ns, "qwen", "the first status", func(ms *v1.ModelServing) bool {
		return ms.Status.ObservedGeneration == ms.Generation && len(ms.Status.Groups) == 2
	})
	labels := map[string]string{v1.LabelName: "qwen", v1.LabelRevision: first.Status.UpdateRevision}
	for g := range 2 {
		createGroupPods(t, ns, "qwen", g, labels, nil, false, time.Now())
	}
	got := waitServing(t, ns, "qwen", "the groups made, loading", func(ms *v1.ModelServing) bool {
		return ms.Status.Replicas == 2 && ms.Status.UpdatedReplicas == 2
	})
	if got.Status.ReadyReplicas != 0 {
		t.Errorf("%d groups ready, want 0 (their pods load)", got.Status.ReadyReplicas)
	}
	for _, g := range got.Status.Groups {
		if g.Revision == "" || g.Reason == "" {
			t.Errorf("group %d: revision %q, reason %q; want both (the pods' revision, why it is not ready)", g.Index, g.Revision, g.Reason)
		}
	}
}

// A serving whose namespace is being deleted is left alone: its pods go before it does, and its
// status would be written for each of them (twice per serving of a burst whose namespace was
// deleted). Here the namespace stays Terminating (envtest runs no namespace controller) while its
// serving's groups turn ready: nothing is written. The same change in a live namespace is written
// (the manager is at work).
func TestAServingWhoseNamespaceIsBeingDeletedIsNotWritten(t *testing.T) {
	ctx := context.Background()
	doomed, live := namespace(t), namespace(t)
	loading := func(ms *v1.ModelServing) bool { return ms.Status.ReadyReplicas == 0 }
	before := servingWithLoadingGroups(t, doomed, "qwen", loading)
	servingWithLoadingGroups(t, live, "qwen", loading)
	if err := env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: doomed}}); err != nil {
		t.Fatal(err)
	}
	// Its one write: the finalizer goes (TestAServingWhoseNamespaceIsBeingDeletedDropsItsFinalizer).
	before = waitServing(t, doomed, "qwen", "the serving's finalizer gone as its namespace is deleted", func(ms *v1.ModelServing) bool {
		return !controllerutil.ContainsFinalizer(ms, v1.FinalizerChildren)
	})

	markPodsReady(t, doomed, client.MatchingLabels{v1.LabelName: "qwen"})
	markPodsReady(t, live, client.MatchingLabels{v1.LabelName: "qwen"})
	waitServing(t, live, "qwen", "the live namespace's groups ready in the status", func(ms *v1.ModelServing) bool {
		return ms.Status.ReadyReplicas == 2
	})
	time.Sleep(1500 * time.Millisecond)
	after := waitServing(t, doomed, "qwen", "the serving in the namespace being deleted", func(*v1.ModelServing) bool { return true })
	if after.ResourceVersion != before.ResourceVersion || after.Status.ReadyReplicas != 0 {
		t.Errorf("the serving in the namespace being deleted was written (resourceVersion %s → %s, %d groups ready): want it left alone",
			before.ResourceVersion, after.ResourceVersion, after.Status.ReadyReplicas)
	}
}

// A serving whose namespace is being deleted drops its finalizer at once, before the namespace
// controller deletes it: that controller deletes every object of the namespace, the serving's
// children too, and the namespace goes only after them, so the finalizer keeps nothing from being
// left behind; and a serving that controller still finds with a finalizer right after deleting it
// makes it wait 8 s before it looks again (its default estimate for finalizers, halved), every
// time. Here (envtest runs no namespace controller) the finalizer goes while the serving stands
// and its LeaderWorkerSet is held; then the test deletes the serving, as that controller would,
// and it goes at once. A deletion in a live namespace waits for the children
// (TestTheFinalizerKeepsTheServingUntilItsChildrenAreGone).
func TestAServingWhoseNamespaceIsBeingDeletedDropsItsFinalizer(t *testing.T) {
	ctx := context.Background()
	doomed := namespace(t)
	ms := serving(doomed, "qwen")
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	waitLWS(t, doomed, "qwen", func(*lwsv1.LeaderWorkerSet) bool { return true })
	waitServing(t, doomed, "qwen", "the finalizer", func(ms *v1.ModelServing) bool {
		return controllerutil.ContainsFinalizer(ms, v1.FinalizerChildren)
	})
	// Hold the LeaderWorkerSet, so that a finalizer that waited for it would wait for good.
	lws, err := getLWS(ctx, doomed, "qwen")
	if err != nil {
		t.Fatal(err)
	}
	lws.Finalizers = append(lws.Finalizers, "test.kubectl-llm.dev/hold")
	if err := env.Client.Update(ctx, lws); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if lws, err := getLWS(ctx, doomed, "qwen"); err == nil {
			lws.Finalizers = nil
			_ = env.Client.Update(ctx, lws)
		}
	})
	if err := env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: doomed}}); err != nil {
		t.Fatal(err)
	}
	dropped := waitServing(t, doomed, "qwen", "the finalizer gone while the serving stands", func(ms *v1.ModelServing) bool {
		return !controllerutil.ContainsFinalizer(ms, v1.FinalizerChildren)
	})
	if !dropped.DeletionTimestamp.IsZero() {
		t.Fatalf("the serving is being deleted (%v): the test deletes it only after its finalizer went", dropped.DeletionTimestamp)
	}
	if err := env.Client.Delete(ctx, ms); err != nil {
		t.Fatal(err)
	}
	took := testenv.Eventually(t, 10*time.Second, "the serving gone, its LeaderWorkerSet left to the namespace controller", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(ms), &v1.ModelServing{})
		return apierrors.IsNotFound(err), err
	})
	t.Logf("serving removed %s after its deletion", took)
	if _, err := getLWS(ctx, doomed, "qwen"); err != nil {
		t.Errorf("the LeaderWorkerSet: %v; want it still there, being the namespace controller's to delete", err)
	}
}
