package operator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// A rollout step as the StatefulSet controller, the garbage collector and LWS make it (envtest
// runs none of them: the test writes what they would): the group's leader is replaced by one of
// the new revision, whose worker StatefulSet LWS makes while the previous leader's worker still
// holds the name of its pod (here by a finalizer; on a cluster, its grace period or a busy
// garbage collector). The StatefulSet controller backs off on "already exists" and is not woken
// by that pod's going (another owner): the operator touches the new StatefulSet when it goes, so
// the controller makes the worker at once.
func TestAWorkerStatefulSetIsTouchedWhenAPreviousLeadersPodLetsGoOfItsWorkersName(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ms := serving(ns, "qwen")
	ms.Spec.Replicas = ptr.To[int32](1)
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	lws := waitLWS(t, ns, "qwen", func(l *lwsv1.LeaderWorkerSet) bool { return revisionLabel(l) != "" })
	createReadyGroups(t, ns, "qwen", 1, revisionLabel(lws))

	// The previous leader's worker keeps its name until the test lets it go.
	const hold = "test.kubectl-llm.dev/hold"
	old := &corev1.Pod{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "qwen-0-1"}, old); err != nil {
		t.Fatal(err)
	}
	old.Finalizers = append(old.Finalizers, hold)
	if err := env.Client.Update(ctx, old); err != nil {
		t.Fatal(err)
	}
	// The StatefulSet controller replaces the leader by one of the new revision.
	gone := func(name string) {
		t.Helper()
		testenv.Eventually(t, 10*time.Second, "pod "+name+" gone", func() (bool, error) {
			err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &corev1.Pod{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
	}
	if err := env.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "qwen-0"}}, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	gone("qwen-0")
	leader := createGroupPod(t, ns, "qwen", 0, 0, map[string]string{v1.LabelName: "qwen", v1.LabelRevision: "qwen-next"}, nil, true, time.Now())
	// LWS makes the new leader's worker StatefulSet, owned by it.
	labels := map[string]string{lwsv1.SetNameLabelKey: "qwen", lwsv1.GroupIndexLabelKey: "0"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "qwen-0", Namespace: ns, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Pod", Name: "qwen-0", UID: leader.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "x"}}}}},
	}
	if err := env.Client.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	// The operator's pass sees the name held: the group's worker is the previous leader's.
	waitServing(t, ns, "qwen", "the worker shown as the previous leader's", func(ms *v1.ModelServing) bool {
		return len(ms.Status.Groups) == 1 && strings.Contains(ms.Status.Groups[0].Reason, "previous leader")
	})
	time.Sleep(1200 * time.Millisecond) // held for longer than the operator's heldLong (1 s)
	if err := env.Client.Delete(ctx, old, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	touched := func() (string, error) {
		got := &appsv1.StatefulSet{}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(sts), got)
		return got.Annotations[v1.AnnotationWorkerRetry], err
	}
	time.Sleep(300 * time.Millisecond) // the pod's deletion (its finalizer still on) reaches the operator
	if got, err := touched(); err != nil || got != "" {
		t.Fatalf("the StatefulSet was touched (%q, %v) while the old worker still holds the name", got, err)
	}
	// The old worker goes: the StatefulSet is touched with its UID.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(old), old); err != nil {
		t.Fatal(err)
	}
	old.Finalizers = nil
	if err := env.Client.Update(ctx, old); err != nil {
		t.Fatal(err)
	}
	gone("qwen-0-1")
	testenv.Eventually(t, 10*time.Second, "the worker StatefulSet touched", func() (bool, error) {
		got, err := touched()
		return got == string(old.UID), err
	})
}
