package operator_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/operator"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// The operator calls a rollout done only once the leader StatefulSet is done rolling, read from
// the API server: the pods (from its cache) may show every group ready on the revision while the
// StatefulSet controller has not yet acted on the latest spec and will still take a group down.
// (The e2e saw it: a rollout undone mid-way, rollout status said done, and a group was then
// recreated.) envtest runs no LWS or StatefulSet controller: the test writes what they would.
func TestARolloutIsCalledDoneOnlyOnceItsLeaderStatefulSetIsDoneRolling(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	rev := createdWithObservedLWS(t, ns, "qwen")
	createReadyGroups(t, ns, "qwen", 2, rev)

	progressing := func(want string) func(*v1.ModelServing) bool {
		return func(ms *v1.ModelServing) bool {
			c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing)
			return ms.Status.ObservedGeneration == ms.Generation && c != nil && strings.Contains(c.Message, want)
		}
	}
	got := waitServing(t, ns, "qwen", "not done while there is no leader StatefulSet",
		progressing("2 of 2 groups updated, 2 of 2 ready; not done yet: leader StatefulSet qwen does not exist"))
	if got.Status.Phase == v1.PhaseReady || got.Status.ReadyGroups != "2/2" {
		t.Errorf("phase %s, ready groups %s: want not Ready yet, 2/2 groups ready", got.Status.Phase, got.Status.ReadyGroups)
	}

	labels := map[string]string{lwsv1.SetNameLabelKey: "qwen", lwsv1.WorkerIndexLabelKey: "0"}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: ns}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "x"}}}},
	}}
	if err := env.Client.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	waitServing(t, ns, "qwen", "not done while the StatefulSet controller has not observed its spec",
		progressing("not done yet: the StatefulSet controller has not yet acted on generation 1 of StatefulSet qwen (it observed 0)"))

	// Observed, but one leader still on the old revision.
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 1, CurrentRevision: "qwen-1", UpdateRevision: "qwen-2"}
	if err := env.Client.Status().Update(ctx, sts); err != nil {
		t.Fatal(err)
	}
	waitServing(t, ns, "qwen", "not done while a leader is on the old revision",
		progressing("not done yet: StatefulSet qwen has 1 of 2 leader pods on its update revision, 2 in all"))

	// Every leader on the update revision (its ready count and current revision trail the pods,
	// which say ready: the pods decide). Nothing the operator watches changes: it looks again
	// on its own.
	sts.Status.UpdatedReplicas = 2
	if err := env.Client.Status().Update(ctx, sts); err != nil {
		t.Fatal(err)
	}
	done := waitServing(t, ns, "qwen", "done once the leader StatefulSet is", func(ms *v1.ModelServing) bool {
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing)
		return c != nil && c.Reason == v1.ReasonRolloutComplete
	})
	if done.Status.Phase != v1.PhaseReady || done.Status.CurrentRevision != rev {
		t.Errorf("phase %s current revision %s: want Ready on %s", done.Status.Phase, done.Status.CurrentRevision, rev)
	}
}

// createdWithObservedLWS creates a serving named name and waits for its LeaderWorkerSet, whose
// status then says its controller observed its spec, as the LWS controller would; it returns the
// revision the LeaderWorkerSet's template carries.
func createdWithObservedLWS(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Create(ctx, serving(ns, name)); err != nil {
		t.Fatal(err)
	}
	lws := waitLWS(t, ns, name, func(l *lwsv1.LeaderWorkerSet) bool { return revisionLabel(l) != "" })
	lws.Status.ObservedGeneration = lws.Generation // the LWS controller saw the spec
	if err := env.Client.Status().Update(ctx, lws); err != nil {
		t.Fatal(err)
	}
	return revisionLabel(lws)
}

// createReadyGroups creates the 2 pods of each of n groups of a serving without roles, ready on
// revision rev, as LWS and the kubelet would.
func createReadyGroups(t *testing.T, ns, serving string, n int, rev string) {
	t.Helper()
	for g := range n {
		createGroupPods(t, ns, serving, g, map[string]string{v1.LabelName: serving, v1.LabelRevision: rev}, nil, true, time.Now())
	}
}

// createGroupPods creates the 2 pods of group g of the LeaderWorkerSet setName, with labels (the
// LWS's own are added) and annotations, running since started and ready or not, as LWS and the
// kubelet would.
func createGroupPods(t *testing.T, ns, setName string, g int, labels, annotations map[string]string, ready bool, started time.Time) {
	t.Helper()
	for w := range 2 {
		createGroupPod(t, ns, setName, g, w, labels, annotations, ready, started)
	}
}

// createGroupPod creates pod w of group g (see createGroupPods) and returns it.
func createGroupPod(t *testing.T, ns, setName string, g, w int, labels, annotations map[string]string, ready bool, started time.Time) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	since := metav1.NewTime(started.Truncate(time.Second))
	readyStatus := corev1.ConditionFalse
	if ready {
		readyStatus = corev1.ConditionTrue
	}
	name := fmt.Sprintf("%s-%d", setName, g)
	if w > 0 {
		name += fmt.Sprintf("-%d", w)
	}
	podLabels := map[string]string{lwsv1.SetNameLabelKey: setName, lwsv1.GroupIndexLabelKey: fmt.Sprint(g), lwsv1.WorkerIndexLabelKey: fmt.Sprint(w)}
	maps.Copy(podLabels, labels)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: podLabels, Annotations: annotations},
		Spec:       corev1.PodSpec{NodeName: "gpu-node-0", Containers: []corev1.Container{{Name: "engine", Image: "x"}}},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &since, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: since},
		{Type: corev1.PodReady, Status: readyStatus, LastTransitionTime: since},
	}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// A group that goes not ready and comes back with no rollout under way (LWS recreates a group
// when one of its pods fails) is a recovery, not a rollout that completes: the serving gets a
// GroupsRecovered event, not a second RolloutComplete, and the pass that sees it back reads no
// leader StatefulSet (nothing was handed to one since the stored status called it done).
// envtest runs no LWS or StatefulSet controller: the test does what they would.
func TestAGroupBackWithNoRolloutIsARecoveryNotARolloutComplete(t *testing.T) {
	ns := namespace(t)
	rev := createdWithObservedLWS(t, ns, "qwen")
	createReadyGroups(t, ns, "qwen", 2, rev)
	createDoneLeaderSet(t, ns, "qwen", 2)
	progressing := func(reason string, ready int32) func(*v1.ModelServing) bool {
		return func(ms *v1.ModelServing) bool {
			c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing)
			return ms.Status.ObservedGeneration == ms.Generation && c != nil && c.Reason == reason && ms.Status.ReadyReplicas == ready
		}
	}
	waitServing(t, ns, "qwen", "the first start done", progressing(v1.ReasonRolloutComplete, 2))
	waitEvents(t, ns, "qwen", "the first start's RolloutComplete", func(reasons map[string]int) bool { return reasons["RolloutComplete"] == 1 })

	w := primaryRequests
	w.watch(t, ns)
	// Group 1 recreated: its pods go and come back on the same revision, loading, then ready.
	replaceGroup(t, ns, "qwen", 1, rev)
	waitServing(t, ns, "qwen", "group 1 down", func(ms *v1.ModelServing) bool {
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing)
		return ms.Status.ReadyReplicas == 1 && c != nil && c.Reason != v1.ReasonRolloutComplete
	})
	markPodsReady(t, ns, client.MatchingLabels{v1.LabelName: "qwen", lwsv1.GroupIndexLabelKey: "1"})
	back := waitServing(t, ns, "qwen", "every group back", progressing(v1.ReasonRolloutComplete, 2))
	if back.Status.Phase != v1.PhaseReady || back.Status.CurrentRevision != rev {
		t.Errorf("after the recovery: phase %s, current revision %s; want Ready on %s", back.Status.Phase, back.Status.CurrentRevision, rev)
	}
	reasons := waitEvents(t, ns, "qwen", "the recovery's event", func(reasons map[string]int) bool { return reasons[operator.EventGroupsRecovered] > 0 })
	if reasons["RolloutComplete"] != 1 || reasons[operator.EventGroupsRecovered] != 1 {
		t.Errorf("events %v: want one RolloutComplete (the first start) and one %s (the recovery)", reasons, operator.EventGroupsRecovered)
	}
	for _, req := range w.requests() {
		if strings.Contains(req, "/statefulsets/") {
			t.Errorf("the recovery read the leader StatefulSet (%s): nothing was handed to it since the serving was done", req)
		}
	}
}

// waitEvents waits until the events of a serving, counted by reason, satisfy cond, and returns
// them.
func waitEvents(t *testing.T, ns, name, what string, cond func(map[string]int) bool) map[string]int {
	t.Helper()
	var reasons map[string]int
	testenv.Eventually(t, 20*time.Second, what, func() (bool, error) {
		list := &corev1.EventList{}
		if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		reasons = map[string]int{}
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "ModelServing" && e.InvolvedObject.Name == name {
				reasons[e.Reason] += max(int(e.Count), 1)
			}
		}
		if cond(reasons) {
			return true, nil
		}
		return false, fmt.Errorf("the serving's events so far, by reason: %v", reasons)
	})
	return reasons
}
