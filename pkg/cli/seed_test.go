package cli_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// seedServing creates a serving from a fixture (status is written later, with writeStatus).
func seedServing(t *testing.T, ns string, b *fixtures.ServingBuilder) *v1.ModelServing {
	t.Helper()
	ms := b.Obj()
	ms.Namespace = ns
	ms.Status = v1.ModelServingStatus{}
	ms.Generation = 0
	create(t, ms)
	return ms
}

// writeStatus stores a status as the operator would, observing the current generation.
func writeStatus(t *testing.T, ms *v1.ModelServing, st v1.ModelServingStatus) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ms), ms); err != nil {
		t.Fatal(err)
	}
	if st.ObservedGeneration == 0 {
		st.ObservedGeneration = ms.Generation
	}
	for i := range st.Conditions {
		if st.Conditions[i].ObservedGeneration == 0 {
			st.Conditions[i].ObservedGeneration = ms.Generation
		}
	}
	ms.Status = st
	if err := env.Client.Status().Update(ctx, ms); err != nil {
		t.Fatalf("write status of %s: %v", ms.Name, err)
	}
}

// recordRevision creates the ControllerRevision the operator would record for a spec.
func recordRevision(t *testing.T, ms *v1.ModelServing, spec v1.ModelServingSpec, number int64) string {
	t.Helper()
	rs, err := revision.SpecOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := revision.NewControllerRevision(ms, rs, number)
	if err != nil {
		t.Fatal(err)
	}
	create(t, cr)
	return cr.Name
}

// seedPod creates a group pod from a fixture: the spec the API requires (an engine container
// asking gpus), then, separately, its status through the status subresource (pods never run
// here: there is no kubelet). The status is written by the returned function once the test
// knows its clock; startedAgo moves the pod's start (and its container's) relative to it.
type seededPod struct {
	pod    *corev1.Pod
	status corev1.PodStatus
}

func seedPod(t *testing.T, ns string, gpus int64, b *fixtures.PodBuilder, finalizer bool) *seededPod {
	t.Helper()
	return seedPodWith(t, ns, gpus, b, finalizer, nil)
}

// seedPodWith is seedPod with a last change to the pod before it is created (its node, say).
func seedPodWith(t *testing.T, ns string, gpus int64, b *fixtures.PodBuilder, finalizer bool, mutate func(*corev1.Pod)) *seededPod {
	t.Helper()
	p := b.Obj()
	pod := p.DeepCopy()
	pod.Namespace = ns
	pod.CreationTimestamp = metav1.Time{}
	pod.Status = corev1.PodStatus{}
	c := corev1.Container{Name: "engine", Image: "vllm/vllm-openai:v0.11.0"}
	if gpus > 0 {
		q := *resource.NewQuantity(gpus, resource.DecimalSI)
		c.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": q}, Limits: corev1.ResourceList{"nvidia.com/gpu": q}}
	}
	pod.Spec.Containers = []corev1.Container{c}
	if finalizer {
		pod.Finalizers = []string{"test.kubectl-llm.dev/keep"}
	}
	if mutate != nil {
		mutate(pod)
	}
	create(t, pod)
	if finalizer {
		t.Cleanup(func() {
			ctx := context.Background()
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err == nil {
				pod.Finalizers = nil
				_ = env.Client.Update(ctx, pod)
			}
		})
	}
	return &seededPod{pod: pod, status: p.Status}
}

// writeStatus stores the pod's fixture status with its start times moved to now-startedAgo.
func (s *seededPod) writeStatus(t *testing.T, now time.Time, startedAgo time.Duration) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s.pod), s.pod); err != nil {
		t.Fatal(err)
	}
	st := *s.status.DeepCopy()
	if st.StartTime != nil {
		st.StartTime = &metav1.Time{Time: now.Add(-startedAgo)}
	}
	for i := range st.Conditions {
		st.Conditions[i].LastTransitionTime = metav1.NewTime(now.Add(-startedAgo))
	}
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		if cs.Image == "" {
			cs.Image = "vllm/vllm-openai:v0.11.0"
		}
		if cs.State.Running != nil {
			cs.State.Running.StartedAt = metav1.NewTime(now.Add(-startedAgo))
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			t.StartedAt, t.FinishedAt = metav1.NewTime(now.Add(-startedAgo)), metav1.NewTime(now.Add(-time.Minute))
		}
	}
	s.pod.Status = st
	if err := env.Client.Status().Update(ctx, s.pod); err != nil {
		t.Fatalf("write status of pod %s: %v", s.pod.Name, err)
	}
}

// event records a core/v1 event about an object, as the scheduler, kubelet or operator would.
func event(t *testing.T, ns, name, kind, objName, typ, reason, msg string, count int32, first, last time.Time) {
	t.Helper()
	apiVersion := "v1"
	if kind == "ModelServing" {
		apiVersion = v1.GroupVersion.String()
	}
	create(t, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Name: objName, Namespace: ns, APIVersion: apiVersion},
		Type:           typ, Reason: reason, Message: msg, Count: count,
		FirstTimestamp: metav1.NewTime(first), LastTimestamp: metav1.NewTime(last),
		Source: corev1.EventSource{Component: "test"},
	})
}

// conditions builds the three conditions with one transition time.
func conditions(at time.Time, available, progressing, degraded [3]string) []metav1.Condition {
	mk := func(typ string, c [3]string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(c[0]), Reason: c[1], Message: c[2], LastTransitionTime: metav1.NewTime(at)}
	}
	return []metav1.Condition{mk(v1.ConditionAvailable, available), mk(v1.ConditionProgressing, progressing), mk(v1.ConditionDegraded, degraded)}
}
