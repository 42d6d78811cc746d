package status_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-llm/kubectl-llm/pkg/status"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

func TestEventsOfKeepOnlyTheLiveObjectsEvents(t *testing.T) {
	replacement := fixtures.Pod("cl", 1, 1, "r1").Obj()
	replacement.UID = "pod-new"
	leader := fixtures.Pod("cl", 1, 0, "r1").Obj() // a pod the test API server gave no UID
	ev := func(name, kind, obj string, uid types.UID) corev1.Event {
		return corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name}, InvolvedObject: corev1.ObjectReference{Kind: kind, Name: obj, UID: uid}}
	}
	events := []corev1.Event{
		ev("stale-bind", "Pod", "cl-1-1", "pod-old"), // the scheduler, about the deleted cl-1-1
		ev("scheduled", "Pod", "cl-1-1", "pod-new"),  // about its replacement
		ev("no-uid", "Pod", "cl-1-1", ""),            // a recorder that does not say which
		ev("leader", "Pod", "cl-1", "whatever"),      // the live pod's UID is unknown: by name
		ev("other-pod", "Pod", "qwen-0", "pod-x"),    // another serving's pod
		ev("old-serving", "ModelServing", "cl", "ms-old"),
		ev("serving", "ModelServing", "cl", "ms-live"),
		ev("other-serving", "ModelServing", "qwen", "ms-q"),
		ev("lws", "LeaderWorkerSet", "cl", "lws"),
	}
	var got []string
	for _, e := range status.EventsOf(events, "cl", "ms-live", []corev1.Pod{replacement, leader}) {
		got = append(got, e.Name)
	}
	want := []string{"scheduled", "no-uid", "leader", "serving"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
