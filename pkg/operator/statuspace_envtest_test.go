package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
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

// A rollout's groups going not ready one after the other are its progress, written at most once
// an interval, not a status write each: a rollout of 4 groups of 2 on the simulated cluster wrote
// the status 10 times (each group down, then up), each write beside LWS's own steps. Its end is
// written at once. envtest runs no LWS or StatefulSet controller: the test does what they would.
func TestARolloutsGroupsGoingNotReadyAreNotAStatusWriteEach(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	oldRev := createdWithObservedLWS(t, ns, "qwen")
	createReadyGroups(t, ns, "qwen", 2, oldRev)
	createDoneLeaderSet(t, ns, "qwen", 2)
	progressing := func(reason string) func(*v1.ModelServing) bool {
		return func(ms *v1.ModelServing) bool {
			c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing)
			return ms.Status.ObservedGeneration == ms.Generation && c != nil && c.Reason == reason && ms.Status.ReadyReplicas == 2
		}
	}
	waitServing(t, ns, "qwen", "the first rollout done", progressing(v1.ReasonRolloutComplete))

	updateServing(t, ns, "qwen", func(ms *v1.ModelServing) { ms.Spec.Engine.Image = "vllm/vllm-openai:v0.12.0" })
	lws := waitLWS(t, ns, "qwen", func(l *lwsv1.LeaderWorkerSet) bool { return revisionLabel(l) != oldRev })
	newRev := revisionLabel(lws)
	lws.Status.ObservedGeneration = lws.Generation
	if err := env.Client.Status().Update(ctx, lws); err != nil {
		t.Fatal(err)
	}
	rolling := waitServing(t, ns, "qwen", "the rollout begun", progressing(v1.ReasonRollingOut))
	w, err := watchClient(t).Watch(ctx, &v1.ModelServingList{}, client.InNamespace(ns),
		client.MatchingFields{"metadata.name": "qwen"}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rolling.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	next := func(what string) (v1.ModelServingStatus, time.Time) {
		t.Helper()
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatal("the watch ended")
				}
				if ev.Type == watch.Modified {
					return ev.Object.(*v1.ModelServing).Status, time.Now()
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no status write within 20 s: want %s", what)
			}
		}
	}

	// LWS replaces group 1: its pods go, the new revision's come up loading.
	down := time.Now()
	replaceGroup(t, ns, "qwen", 1, newRev)
	st, at := next("group 1 not ready")
	if st.ReadyReplicas != 1 || st.Groups[1].Ready {
		t.Fatalf("the first write after group 1 was replaced: %d groups ready, group 1 ready %v; want 1, false\n%+v", st.ReadyReplicas, st.Groups[1].Ready, st)
	}
	// Held back as detail: written an interval (1 s) after the pass that first saw it, which
	// came after the pods went. Written at once, it came within a few ms.
	if waited := at.Sub(down); waited < 900*time.Millisecond {
		t.Errorf("group 1 going not ready mid rollout was written %s after its pods went: want it held back as the rollout's progress (one write an interval at most)", waited)
	}
	if st.Groups[1].Revision != newRev || st.Groups[1].Reason == "" {
		t.Errorf("group 1 written with revision %q, reason %q: want %s and why it is not ready (the detail held with it)", st.Groups[1].Revision, st.Groups[1].Reason, newRev)
	}

	// The last group: every group on the new revision, group 0 not ready yet. Still the
	// rollout's progress: said Scaling, it was a status write of its own, at once, and the
	// reason went back to RollingOut with the next step.
	markPodsReady(t, ns, client.MatchingLabels{v1.LabelName: "qwen", lwsv1.GroupIndexLabelKey: "1"})
	replaceGroup(t, ns, "qwen", 0, newRev)
	for {
		st, _ := next("every group updated, group 0 not ready")
		c := meta.FindStatusCondition(st.Conditions, v1.ConditionProgressing)
		if c == nil || c.Reason != v1.ReasonRollingOut {
			t.Fatalf("mid rollout (%d groups updated, %d ready) the status says Progressing %v: want RollingOut until the rollout is done", st.UpdatedReplicas, st.ReadyReplicas, c)
		}
		if st.UpdatedReplicas == 2 && st.ReadyReplicas == 1 {
			break
		}
	}

	// Its end: written at once when the last group is ready.
	markPodsReady(t, ns, client.MatchingLabels{v1.LabelName: "qwen", lwsv1.GroupIndexLabelKey: "0"})
	for {
		st, _ := next("the rollout done")
		c := meta.FindStatusCondition(st.Conditions, v1.ConditionProgressing)
		if c != nil && c.Reason == v1.ReasonRolloutComplete {
			if st.ReadyReplicas != 2 || st.UpdatedReplicas != 2 || st.CurrentRevision != newRev {
				t.Errorf("the rollout's end: %d ready, %d updated, current revision %s; want 2, 2, %s", st.ReadyReplicas, st.UpdatedReplicas, st.CurrentRevision, newRev)
			}
			return
		}
	}
}

// replaceGroup replaces group g of a serving without roles, as LWS does when the partition moves
// below it: the old pods go, the new revision's come up loading.
func replaceGroup(t *testing.T, ns, serving string, g int, rev string) {
	t.Helper()
	deletePods(t, ns, client.MatchingLabels{v1.LabelName: serving, lwsv1.GroupIndexLabelKey: fmt.Sprint(g)}, fmt.Sprintf("group %d's pods", g))
	createGroupPods(t, ns, serving, g, map[string]string{v1.LabelName: serving, v1.LabelRevision: rev}, nil, false, time.Now())
}

// createDoneLeaderSet creates a LeaderWorkerSet's leader StatefulSet as done rolling, as the
// StatefulSet controller reports it: the operator reads it before it calls a rollout done.
func createDoneLeaderSet(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{lwsv1.SetNameLabelKey: name, lwsv1.WorkerIndexLabelKey: "0"}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "x"}}}},
	}}
	if err := env.Client.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: replicas, UpdatedReplicas: replicas}
	if err := env.Client.Status().Update(ctx, sts); err != nil {
		t.Fatal(err)
	}
}

// deletePods deletes the pods sel selects at once (no grace) and waits until they are gone.
func deletePods(t *testing.T, ns string, sel client.MatchingLabels, what string) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), sel, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, what+" gone", func() (bool, error) {
		list := &corev1.PodList{}
		err := env.Client.List(ctx, list, client.InNamespace(ns), sel)
		return err == nil && len(list.Items) == 0, err
	})
}
