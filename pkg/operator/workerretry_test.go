package operator

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/scheme"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
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

// An install whose ClusterRole lacks statefulsets/patch (one made before the touch came) fails no
// pass: each touch is refused, the worker is made after the StatefulSet controller's backoff as
// before, and the operator says why once, not once a touch.
func TestAWorkerStatefulSetThatCannotBePatchedIsSaidOnceAndFailsNoPass(t *testing.T) {
	ctx := context.Background()
	var sets []client.Object
	leaders := map[string]corev1.Pod{}
	for _, name := range []string{"qwen", "gemma"} {
		leader := groupPod(name+"-0", name+"-leader-2", "0", "b", t0)
		leader.Labels[lwsv1.SetNameLabelKey] = name
		leaders[name] = leader
		sets = append(sets, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name + "-0",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: name + "-0", UID: leader.UID, Controller: new(true)}}}})
	}
	patches := 0
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(sets...).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patches++
			return apierrors.NewForbidden(appsv1.Resource("statefulsets"), obj.GetName(), errors.New("RBAC: not allowed"))
		},
	}).Build()
	now := clocktesting.NewFakePassiveClock(t0)
	r := &Reconciler{Client: c, Live: c, Clock: now}
	var said []string
	ctx = log.IntoContext(ctx, funcr.New(func(prefix, args string) { said = append(said, args) }, funcr.Options{Verbosity: 1}))
	for name, leader := range leaders {
		ms := fixtures.Serving(name, "ns").Obj()
		old := groupPod(name+"-0-1", name+"-worker-1", "1", "a", t0)
		old.Labels[lwsv1.SetNameLabelKey] = name
		now.SetTime(t0)
		r.retryHeldWorkers(ctx, ms, []corev1.Pod{leader, old})
		now.SetTime(t0.Add(2 * heldLong))
		r.retryHeldWorkers(ctx, ms, []corev1.Pod{leader}) // the old worker gone: a touch, refused
	}
	if patches != 2 {
		t.Fatalf("%d patches; want one touch a serving", patches)
	}
	forbidden := 0
	for _, line := range said {
		if strings.Contains(line, "Cannot patch StatefulSets") {
			forbidden++
		}
	}
	if forbidden != 1 {
		t.Errorf("said %d times that StatefulSets cannot be patched; want once. The log:\n%s", forbidden, strings.Join(said, "\n"))
	}
}
