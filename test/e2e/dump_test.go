package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// dumpOnFailure logs, when the test fails, what a rollout's failure is read from: the serving's
// status, its LeaderWorkerSet, the StatefulSets, the pods (deleting ones too) and the
// namespace's latest events. A failure seen once in CI is then explained by its own log.
func dumpOnFailure(t *testing.T, ns, name string) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("state at the failure (%s):\n%s", time.Now().Format("15:04:05.000"), stateDump(ns, name))
		}
	})
}

// stateDump describes a serving and everything under it, for a failure message.
func stateDump(ns, name string) string {
	ctx := context.Background()
	var b strings.Builder
	ms := &v1.ModelServing{}
	if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ms); err != nil {
		fmt.Fprintf(&b, "serving: %v\n", err)
	} else {
		st := ms.Status
		fmt.Fprintf(&b, "serving generation %d observed %d phase %s ready %s update %s current %s\n",
			ms.Generation, st.ObservedGeneration, st.Phase, st.ReadyGroups, st.UpdateRevision, st.CurrentRevision)
		for _, c := range st.Conditions {
			fmt.Fprintf(&b, "  %s=%s %s (gen %d, %s): %s\n", c.Type, c.Status, c.Reason, c.ObservedGeneration, c.LastTransitionTime.Format("15:04:05"), c.Message)
		}
	}
	lws := &lwsv1.LeaderWorkerSet{}
	if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, lws); err != nil {
		fmt.Fprintf(&b, "LeaderWorkerSet: %v\n", err)
	} else {
		ru := lws.Spec.RolloutStrategy.RollingUpdateConfiguration
		partition := int32(0)
		if ru != nil {
			partition = ptr.Deref(ru.Partition, 0)
		}
		fmt.Fprintf(&b, "LeaderWorkerSet generation %d observed %d replicas %d partition %d; status replicas %d ready %d updated %d\n",
			lws.Generation, lws.Status.ObservedGeneration, ptr.Deref(lws.Spec.Replicas, 0), partition,
			lws.Status.Replicas, lws.Status.ReadyReplicas, lws.Status.UpdatedReplicas)
	}
	var sets appsv1.StatefulSetList
	if err := kc.List(ctx, &sets, client.InNamespace(ns), client.MatchingLabels{lwsv1.SetNameLabelKey: name}); err != nil {
		fmt.Fprintf(&b, "StatefulSets: %v\n", err)
	}
	for _, s := range sets.Items {
		partition := int32(0)
		if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
			partition = ptr.Deref(ru.Partition, 0)
		}
		fmt.Fprintf(&b, "StatefulSet %s uid %s owner %s template %s replicas %d partition %d; status current %s update %s ready %d%s\n",
			s.Name, s.UID, ownerOf(s.OwnerReferences), s.Spec.Template.Labels[lwsv1.RevisionKey], ptr.Deref(s.Spec.Replicas, 0), partition,
			s.Status.CurrentRevision, s.Status.UpdateRevision, s.Status.ReadyReplicas, deleting(s.DeletionTimestamp))
	}
	var pods corev1.PodList
	if err := kc.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1.LabelName: name}); err != nil {
		fmt.Fprintf(&b, "pods: %v\n", err)
	}
	for _, p := range pods.Items {
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}
		fmt.Fprintf(&b, "pod %s uid %s owner %s revision %s node %q phase %s ready %v created %s%s\n",
			p.Name, p.UID, ownerOf(p.OwnerReferences), p.Labels[v1.LabelRevision], p.Spec.NodeName, p.Status.Phase, ready,
			p.CreationTimestamp.Format("15:04:05"), deleting(p.DeletionTimestamp))
	}
	var events corev1.EventList
	if err := kc.List(ctx, &events, client.InNamespace(ns)); err != nil {
		fmt.Fprintf(&b, "events: %v\n", err)
	}
	sort.SliceStable(events.Items, func(i, j int) bool { return eventTime(events.Items[i]).Before(eventTime(events.Items[j])) })
	const lastEvents = 40
	items := events.Items[max(0, len(events.Items)-lastEvents):]
	for _, e := range items {
		fmt.Fprintf(&b, "event %s %s %s/%s %s x%d: %s\n", eventTime(e).Format("15:04:05.000"), e.Type,
			e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, max(e.Count, 1), e.Message)
	}
	return b.String()
}

func ownerOf(refs []metav1.OwnerReference) string {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			return fmt.Sprintf("%s/%s(%s)", r.Kind, r.Name, r.UID)
		}
	}
	return "none"
}

func deleting(at *metav1.Time) string {
	if at == nil {
		return ""
	}
	return " deleting since " + at.Format("15:04:05")
}

// eventTime is when an event was last seen: a series' last observation, else its time.
func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}
