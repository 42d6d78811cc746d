package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// A rollout step whose previous worker lingers (its grace period on a real node, a busy garbage
// collector here once: the harness saw a group's new leader Ready and its worker missing for
// more than 3 minutes). The new leader's worker StatefulSet comes while the old worker still
// holds its pod's name; the StatefulSet controller's retries back off (5 ms, doubling), and the
// old pod's going does not wake it. Held for 50 s, its next retry would come about 30 s after the
// old pod goes (its retries near 41 s and 82 s after the StatefulSet was made): the operator
// touches the StatefulSet when the pod goes, and the worker is made at once.
func TestAWorkerWhoseNameAPreviousWorkerHeldIsMadeOnceThatPodGoes(t *testing.T) {
	calmTest(t)
	ctx := context.Background()
	ns := namespace(t)
	if err := kc.Create(ctx, newServing(ns, "qwen", 1, 2, 1)); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, "qwen", settle)
	const hold = "test.kubectl-llm.dev/hold"
	old := &corev1.Pod{}
	key := types.NamespacedName{Namespace: ns, Name: "qwen-0-1"}
	if err := kc.Get(ctx, key, old); err != nil {
		t.Fatal(err)
	}
	old.Finalizers = append(old.Finalizers, hold)
	if err := kc.Update(ctx, old); err != nil {
		t.Fatal(err)
	}
	release := func() {
		p := &corev1.Pod{}
		if err := kc.Get(ctx, key, p); err != nil || p.UID != old.UID {
			return
		}
		p.Finalizers = nil
		_ = kc.Update(ctx, p)
	}
	defer release() // on a failure too: the namespace goes at the end

	update(t, ns, "qwen", newImage)
	// The new leader's worker StatefulSet is made while the old worker still holds the name.
	testenv.Eventually(t, settle, "the new leader's worker StatefulSet", func() (bool, error) {
		leader, sts := &corev1.Pod{}, &appsv1.StatefulSet{}
		if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: "qwen-0"}, leader); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: "qwen-0"}, sts); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		ref := metav1.GetControllerOf(sts)
		return ref != nil && ref.UID == leader.UID && leader.CreationTimestamp.After(old.CreationTimestamp.Time), nil
	})
	time.Sleep(50 * time.Second)
	p := &corev1.Pod{}
	if err := kc.Get(ctx, key, p); err != nil || p.UID != old.UID || p.DeletionTimestamp == nil {
		t.Fatalf("the old worker after 50 s: %v, deleting %v, the same pod %v: want it still there, being deleted", err, p.DeletionTimestamp != nil, p.UID == old.UID)
	}
	released := time.Now()
	release()
	testenv.Eventually(t, settle, "the new worker", func() (bool, error) {
		p := &corev1.Pod{}
		if err := kc.Get(ctx, key, p); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return p.UID != old.UID, fmt.Errorf("still the old worker")
	})
	took := time.Since(released)
	t.Logf("the new worker was made %s after the old one's name was let go", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("the new worker was made %s after the old one went: want at once (the StatefulSet controller's own retry comes about 30 s later)", took.Round(time.Millisecond))
	}
	waitReady(t, ns, "qwen", settle)
}
