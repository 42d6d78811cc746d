package operator

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

var t0 = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)

func groupPod(name, uid, worker, rev string, created time.Time) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(created),
		Labels: map[string]string{lwsv1.SetNameLabelKey: "qwen", lwsv1.GroupIndexLabelKey: "0", lwsv1.WorkerIndexLabelKey: worker, v1.LabelRevision: rev}}}
}

func deleting(p corev1.Pod) corev1.Pod {
	p.DeletionTimestamp = &metav1.Time{Time: t0}
	return p
}

func TestAWorkerNameIsHeldByAPodOfTheGroupsPreviousLeaderOnly(t *testing.T) {
	newLeader := groupPod("qwen-0", "leader-2", "0", "b", t0)
	cases := map[string]struct {
		pods []corev1.Pod
		want types.UID // the holder of qwen-0-1, "" for none
	}{
		"a worker of another revision than its leader's": {[]corev1.Pod{newLeader, groupPod("qwen-0-1", "worker-1", "1", "a", t0)}, "worker-1"},
		"the same, being deleted":                        {[]corev1.Pod{newLeader, deleting(groupPod("qwen-0-1", "worker-1", "1", "a", t0))}, "worker-1"},
		"a worker made well before its leader":           {[]corev1.Pod{newLeader, groupPod("qwen-0-1", "worker-1", "1", "b", t0.Add(-time.Minute))}, "worker-1"},
		"the leader's own worker":                        {[]corev1.Pod{newLeader, groupPod("qwen-0-1", "worker-2", "1", "b", t0)}, ""},
		"a leader being deleted (a group's restart)":     {[]corev1.Pod{deleting(newLeader), groupPod("qwen-0-1", "worker-1", "1", "a", t0)}, ""},
		"no leader": {[]corev1.Pod{groupPod("qwen-0-1", "worker-1", "1", "a", t0)}, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			held := heldWorkerNames(c.pods)
			got := held["qwen-0-1"]
			if got.uid != c.want || len(held) > 1 {
				t.Fatalf("held %+v; want qwen-0-1 held by %q alone", held, c.want)
			}
			if c.want != "" && (got.leader != "qwen-0" || got.leaderUID != "leader-2") {
				t.Errorf("hold %+v: want it for leader qwen-0 (leader-2), whose worker StatefulSet has its name", got)
			}
		})
	}
}

// A hold ends for good (the worker StatefulSet is touched) when the holding pod is gone after
// holding the name for heldLong or more and the group's leader is the same: never for a short
// hold (the StatefulSet controller's backoff is as short), a name a new pod took, or a leader
// that changed.
func TestAHoldEndsWhenItsPodGoesAfterHoldingTheNameLong(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "qwen"}
	leader := groupPod("qwen-0", "leader-2", "0", "b", t0)
	old := groupPod("qwen-0-1", "worker-1", "1", "a", t0)
	cases := map[string]struct {
		after time.Duration
		then  []corev1.Pod
		ended bool
	}{
		"gone after holding it long":                   {heldLong, []corev1.Pod{leader}, true},
		"gone after holding it briefly":                {heldLong - time.Millisecond, []corev1.Pod{leader}, false},
		"taken by the new worker (the controller won)": {2 * heldLong, []corev1.Pod{leader, groupPod("qwen-0-1", "worker-2", "1", "b", t0)}, false},
		"gone with the leader replaced again":          {2 * heldLong, []corev1.Pod{groupPod("qwen-0", "leader-3", "0", "c", t0)}, false},
		"gone with the leader being deleted":           {2 * heldLong, []corev1.Pod{deleting(leader)}, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var h workerHolds
			if ended := h.update(key, []corev1.Pod{leader, old}, t0); len(ended) != 0 {
				t.Fatalf("ended at once: %+v", ended)
			}
			if ended := h.update(key, []corev1.Pod{leader, deleting(old)}, t0.Add(c.after/2)); len(ended) != 0 {
				t.Fatalf("ended while its pod is being deleted: %+v", ended)
			}
			ended := h.update(key, c.then, t0.Add(c.after))
			if c.ended != (len(ended) == 1) || (c.ended && ended[0].uid != "worker-1") {
				t.Fatalf("ended %+v; want the hold of worker-1 ended: %v", ended, c.ended)
			}
			if again := h.update(key, c.then, t0.Add(c.after+time.Minute)); len(again) != 0 {
				t.Errorf("ended again: %+v", again)
			}
			if len(h.m) != 0 {
				t.Errorf("holds left: %+v", h.m)
			}
		})
	}
}
