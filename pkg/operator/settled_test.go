package operator

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/scheme"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// Every group ready and the leader StatefulSet settled, but the Service not made yet (the Service
// maker is still at it): not done; done once the cache holds the Service, or when its name is
// someone else's (reported as a NameConflict instead).
func TestARolloutIsNotDoneBeforeItsServiceIsMade(t *testing.T) {
	ms := fixtures.Serving("qwen", "ns").Replicas(2).GroupSize(2).Generation(1).Obj()
	lws := &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen", Generation: 1}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen", Generation: 1},
		Spec:   appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, CurrentRevision: "a", UpdateRevision: "a"}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(sts).Build()
	r := &Reconciler{Client: c, Live: c}
	pods := append(fixtures.Group("qwen", 0, 2, "r1"), fixtures.Group("qwen", 1, 2, "r1")...)
	summarize := func(obs *observed) status.Summary {
		in := status.Input{Serving: ms, LWS: lws, Pods: pods, UpdateRevision: "r1", TemplateRevision: "r1", Now: time.Now()}
		s, _ := r.confirmDone(context.Background(), obs, &in, status.Summarize(in))
		return s
	}

	s := summarize(&observed{serving: ms, lws: lws})
	if s.Done || !strings.Contains(s.Progress.Message, "not done yet: its Service qwen-api is not made yet") {
		t.Errorf("no Service yet: done %v, %q; want not done, saying the Service is not made yet", s.Done, s.Progress.Message)
	}
	if settling(s) {
		t.Error("a serving waiting for its Service looks again every second; its Service's create event brings the next pass")
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen-api"}}
	if s := summarize(&observed{serving: ms, lws: lws, service: svc}); !s.Done || s.Progress.Reason != v1.ReasonRolloutComplete {
		t.Errorf("with its Service: done %v, %s: %s; want done", s.Done, s.Progress.Reason, s.Progress.Message)
	}
	if s := summarize(&observed{serving: ms, lws: lws, serviceConflict: true}); !s.Done {
		t.Errorf("the Service's name someone else's: done %v (%s); want the conflict reported, not waited for", s.Done, s.Progress.Message)
	}
}

// What is a recovery: the stored status called this very serving, generation, revision and
// LeaderWorkerSet done before, and only groups went not ready since. Then the leader StatefulSet
// is not read; anything else (a new serving, a new generation, a LeaderWorkerSet changed or made
// again since, an operator that never saw the serving done) reads it as for a rollout's end.
func TestARecoveryIsTheStateCalledDoneBefore(t *testing.T) {
	done := metav1.Condition{Type: v1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: v1.ReasonRolloutComplete, ObservedGeneration: 1}
	scaling := metav1.Condition{Type: v1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: v1.ReasonScaling, ObservedGeneration: 1}
	servingWith := func(c metav1.Condition, gen int64) *v1.ModelServing {
		ms := fixtures.Serving("qwen", "ns").Replicas(2).GroupSize(2).Generation(gen).Obj()
		ms.UID = "ms-1"
		ms.Status.ObservedGeneration, ms.Status.UpdateRevision, ms.Status.CurrentRevision = gen, "r1", "r1"
		ms.Status.Conditions = []metav1.Condition{c}
		return ms
	}
	lwsAt := func(uid string, gen int64) *lwsv1.LeaderWorkerSet {
		return &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen", UID: types.UID(uid), Generation: gen},
			Status: lwsv1.LeaderWorkerSetStatus{ObservedGeneration: gen}}
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen-api"}}
	pods := append(fixtures.Group("qwen", 0, 2, "r1"), fixtures.Group("qwen", 1, 2, "r1")...)
	cases := []struct {
		name string
		// seen is the pass that found the stored status done (nil: none did); then is the pass
		// whose groups are all back.
		seen, then     *observed
		recovered      bool
		leaderSetReads int
	}{
		{"a group back, nothing else changed", &observed{serving: servingWith(done, 1), lws: lwsAt("l-1", 1), service: svc},
			&observed{serving: servingWith(scaling, 1), lws: lwsAt("l-1", 1), service: svc}, true, 0},
		{"a first start: never done before", nil,
			&observed{serving: servingWith(scaling, 1), lws: lwsAt("l-1", 1), service: svc}, false, 1},
		{"a new generation (a scale, a restart)", &observed{serving: servingWith(done, 1), lws: lwsAt("l-1", 1), service: svc},
			&observed{serving: servingWith(withGen(scaling, 2), 2), lws: lwsAt("l-1", 2), service: svc}, false, 1},
		{"the LeaderWorkerSet changed since (a hand edit undone)", &observed{serving: servingWith(done, 1), lws: lwsAt("l-1", 1), service: svc},
			&observed{serving: servingWith(scaling, 1), lws: lwsAt("l-1", 3), service: svc}, false, 1},
		{"the LeaderWorkerSet made again", &observed{serving: servingWith(done, 1), lws: lwsAt("l-1", 1), service: svc},
			&observed{serving: servingWith(scaling, 1), lws: lwsAt("l-2", 1), service: svc}, false, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen", Generation: 1},
				Spec:   appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)},
				Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2}}
			reads := 0
			c0 := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(sts).Build()
			live := interceptor.NewClient(c0, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
				if _, ok := o.(*appsv1.StatefulSet); ok {
					reads++
				}
				return c.Get(ctx, key, o, opts...)
			}})
			r := &Reconciler{Client: live, Live: live}
			pass := func(obs *observed) (status.Summary, bool) {
				in := status.Input{Serving: obs.serving, LWS: obs.lws, Pods: pods, UpdateRevision: "r1", TemplateRevision: "r1", Now: time.Now()}
				return r.confirmDone(context.Background(), obs, &in, status.Summarize(in))
			}
			if c.seen != nil {
				pass(c.seen)
			}
			s, recovered := pass(c.then)
			if !s.Done || s.Progress.Reason != v1.ReasonRolloutComplete {
				t.Fatalf("every group back: done %v, %s (%s); want done", s.Done, s.Progress.Reason, s.Progress.Message)
			}
			if recovered != c.recovered || reads != c.leaderSetReads {
				t.Errorf("recovered %v, leader StatefulSet read %d times; want %v, %d", recovered, reads, c.recovered, c.leaderSetReads)
			}
		})
	}
}

func withGen(c metav1.Condition, gen int64) metav1.Condition {
	c.ObservedGeneration = gen
	return c
}
