package operator

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
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
		return r.confirmDone(context.Background(), obs, &in, status.Summarize(in))
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
