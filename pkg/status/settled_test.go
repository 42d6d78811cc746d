package status_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// leaderSet is a leader StatefulSet of 2 leader pods at generation 4, done rolling; mutate
// changes it.
func leaderSet(mutate func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "qwen", Generation: 4}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 4, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, CurrentRevision: "qwen-7d", UpdateRevision: "qwen-7d"}}
	if mutate != nil {
		mutate(sts)
	}
	return sts
}

func TestLeaderSetUnsettled(t *testing.T) {
	cases := []struct {
		name, want string
		sts        *appsv1.StatefulSet
	}{
		{name: "done rolling", sts: leaderSet(nil)},
		{name: "its latest spec not yet observed (an undo reverted it while its controller was busy)",
			sts:  leaderSet(func(s *appsv1.StatefulSet) { s.Generation = 5 }),
			want: "the StatefulSet controller has not yet acted on generation 5 of StatefulSet qwen (it observed 4)"},
		{name: "a leader pod on the old revision", sts: leaderSet(func(s *appsv1.StatefulSet) { s.Status.UpdatedReplicas = 1 }),
			want: "StatefulSet qwen has 1 of 2 leader pods on its update revision, 2 in all"},
		{name: "a leader pod deleted and not yet made again", sts: leaderSet(func(s *appsv1.StatefulSet) { s.Status.Replicas, s.Status.UpdatedReplicas = 1, 1 }),
			want: "StatefulSet qwen has 1 of 2 leader pods on its update revision, 1 in all"},
		{name: "a surge leader still there", sts: leaderSet(func(s *appsv1.StatefulSet) { s.Status.Replicas, s.Status.UpdatedReplicas = 3, 3 }),
			want: "StatefulSet qwen has 3 of 2 leader pods on its update revision, 3 in all"},
		// Readiness is the pods' word: the StatefulSet's ready count and current revision trail
		// them by its controller's queue.
		{name: "its ready count trailing the pods", sts: leaderSet(func(s *appsv1.StatefulSet) { s.Status.ReadyReplicas = 1 })},
		{name: "its current revision not yet moved (it moves once its ready count caught up)", sts: leaderSet(func(s *appsv1.StatefulSet) { s.Status.CurrentRevision = "qwen-5c" })},
		{name: "missing", want: "leader StatefulSet qwen does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := status.LeaderSetUnsettled(tc.sts, "qwen"); got != tc.want {
				t.Errorf("LeaderSetUnsettled = %q, want %q", got, tc.want)
			}
		})
	}
}

// Every group ready on the update revision as the pods show it, but the leader StatefulSet not
// done rolling: not done, still rolling out, and the condition says what it waits for.
func TestARolloutIsNotDoneWhileItsLeaderStatefulSetIsUnsettled(t *testing.T) {
	ms := fixtures.Serving("qwen", "default").Replicas(2).GroupSize(2).Status(v1.ModelServingStatus{UpdateRevision: "r2", CurrentRevision: "r1"}).Obj()
	in := status.Input{Serving: ms, Pods: append(fixtures.Group("qwen", 0, 2, "r2"), fixtures.Group("qwen", 1, 2, "r2")...), UpdateRevision: "r2", TemplateRevision: "r2", Now: now,
		LWS: &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Status: lwsv1.LeaderWorkerSetStatus{ObservedGeneration: 3}}}
	if s := status.Summarize(in); !s.Done || s.Progress.Reason != v1.ReasonRolloutComplete || s.Settling != "" {
		t.Fatalf("without a word from the leader StatefulSet: done %v, %s, settling %q; want done, RolloutComplete", s.Done, s.Progress.Reason, s.Settling)
	}
	in.Unsettled = status.LeaderSetUnsettled(leaderSet(func(s *appsv1.StatefulSet) { s.Generation = 5 }), "qwen")
	s := status.Summarize(in)
	if s.Done || s.Progress.Reason != v1.ReasonRollingOut || s.Settling != in.Unsettled {
		t.Errorf("unsettled: done %v, %s, settling %q; want not done, RollingOut, %q", s.Done, s.Progress.Reason, s.Settling, in.Unsettled)
	}
	if want := "2 of 2 groups updated, 2 of 2 ready; not done yet: the StatefulSet controller has not yet acted"; !strings.HasPrefix(s.Progress.Message, want) {
		t.Errorf("Progressing message %q, want it to start %q", s.Progress.Message, want)
	}
	if s.DeadlineAt.IsZero() {
		t.Error("a rollout not done has no progress deadline")
	}
	// Not ready yet anyway: Unsettled changes nothing.
	in.Pods = append(fixtures.Group("qwen", 0, 2, "r2"), fixtures.Group("qwen", 1, 2, "r1")...)
	if s := status.Summarize(in); s.Settling != "" || s.Done {
		t.Errorf("a group on the old revision: settling %q, done %v; want neither", s.Settling, s.Done)
	}
}

// A new serving's LeaderWorkerSet (its first generation) whose status its controller has not
// written yet: the groups ready and the leader StatefulSet settled say it is done. A changed one
// (a later generation) is done only once its controller says it observed it.
func TestANewServingIsDoneWithoutWaitingForItsLeaderWorkerSetsStatus(t *testing.T) {
	ms := fixtures.Serving("qwen", "default").Replicas(2).GroupSize(2).Obj()
	lws := &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	in := status.Input{Serving: ms, Pods: append(fixtures.Group("qwen", 0, 2, "r1"), fixtures.Group("qwen", 1, 2, "r1")...),
		UpdateRevision: "r1", TemplateRevision: "r1", Now: now, LWS: lws}
	if s := status.Summarize(in); !s.Done || s.Progress.Reason != v1.ReasonRolloutComplete {
		t.Errorf("first generation, no status yet: done %v, %s; want done, RolloutComplete", s.Done, s.Progress.Reason)
	}
	in.Unsettled = status.LeaderSetUnsettled(nil, "qwen")
	if s := status.Summarize(in); s.Done {
		t.Errorf("first generation, no leader StatefulSet: done; want not done (%s)", s.Progress.Message)
	}
	in.Unsettled = ""
	lws.Generation, lws.Status.ObservedGeneration = 2, 1
	if s := status.Summarize(in); s.Done {
		t.Errorf("second generation not observed yet: done; want not done (%s)", s.Progress.Message)
	}
	lws.Status.ObservedGeneration = 2
	if s := status.Summarize(in); !s.Done {
		t.Errorf("second generation observed: not done (%s)", s.Progress.Message)
	}
}

func TestARoleWithAnUnsettledLeaderStatefulSetKeepsTheServingRollingOut(t *testing.T) {
	ms := fixtures.Serving("qwen", "ns").Roles(2, 6, 2).Obj()
	ms.Status.UpdateRevision, ms.Status.CurrentRevision = "r2", "r1"
	in := pdInput(ms, "r2", "r2", 0, 0, nil)
	if s := status.Summarize(in); !s.Done {
		t.Fatalf("every role ready on r2: done %v (%s: %s)", s.Done, s.Progress.Reason, s.Progress.Message)
	}
	in.Roles[1].Unsettled = status.LeaderSetUnsettled(leaderSet(func(s *appsv1.StatefulSet) { s.Status.UpdatedReplicas = 1 }), "qwen-decode")
	s := status.Summarize(in)
	if s.Done || s.Progress.Reason == v1.ReasonRolloutComplete {
		t.Errorf("decode unsettled: done %v, %s; want not done", s.Done, s.Progress.Reason)
	}
	if !strings.Contains(s.Progress.Message, "decode 6 of 6 groups updated, 6 of 6 ready (not done yet: StatefulSet qwen has 1 of 2 leader pods on its update revision") {
		t.Errorf("Progressing message %q does not say what decode waits for", s.Progress.Message)
	}
}
