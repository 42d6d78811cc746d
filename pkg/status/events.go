package status

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// EventTime is when an event last happened, whichever API (core/v1 counts or events.k8s.io
// series) recorded it.
func EventTime(e corev1.Event) time.Time {
	t := e.LastTimestamp.Time
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	if e.EventTime.After(t) {
		t = e.EventTime.Time
	}
	if t.IsZero() {
		t = e.CreationTimestamp.Time
	}
	return t
}

// EventsOf keeps the events about a serving and its pods. Names come back: a StatefulSet's
// replacement pod has the name of the pod it replaces, and a serving deleted and created again
// has its old name. So an event that names its object's UID counts only for the live object of
// that UID (a scheduler's FailedScheduling for a pod that no longer exists is not about its
// replacement); one without a UID (older recorders) counts by name.
func EventsOf(events []corev1.Event, servingName string, servingUID types.UID, pods []corev1.Pod) []corev1.Event {
	podUIDs := map[string]types.UID{}
	for _, p := range pods {
		podUIDs[p.Name] = p.UID
	}
	var out []corev1.Event
	for _, e := range events {
		io := e.InvolvedObject
		var uid types.UID
		switch io.Kind {
		case "ModelServing":
			if io.Name != servingName {
				continue
			}
			uid = servingUID
		case "Pod":
			var ok bool
			if uid, ok = podUIDs[io.Name]; !ok {
				continue
			}
		default:
			continue
		}
		if io.UID == "" || uid == "" || io.UID == uid {
			out = append(out, e)
		}
	}
	return out
}
