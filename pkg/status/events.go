package status

import (
	"time"

	corev1 "k8s.io/api/core/v1"
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
