package status

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// Problem is something outside the pods that keeps a serving from its spec, found by the caller
// (a child another object holds the name of, an apply the API server refused): it becomes the
// Degraded condition, ahead of what the pods say.
type Problem struct {
	Reason  string // a Degraded reason of the API package, e.g. v1.ReasonNameConflict
	Message string // what is wrong and what to do, naming the object or field
}

// EventFailedCreate is the reason the StatefulSet and LeaderWorkerSet controllers give an event
// when they cannot create a pod or a StatefulSet.
const EventFailedCreate = "FailedCreate"

// FailedCreateFresh is how recent a FailedCreate event must be to count: the controllers retry
// (and re-record the event) with a backoff of at most a few minutes while creation keeps failing.
const FailedCreateFresh = 10 * time.Minute

// failedCreate is the problem the latest fresh FailedCreate event describes, when groups still
// miss pods (an event that is no longer true once every pod exists is history, not a problem).
func failedCreate(events []corev1.Event, groups []Group, now time.Time) *Problem {
	missing := false
	for _, g := range groups {
		for _, p := range g.Pods {
			missing = missing || p.State == PodMissing
		}
	}
	if !missing {
		return nil
	}
	var latest *corev1.Event
	for i := range events {
		e := &events[i]
		if e.Reason != EventFailedCreate || now.Sub(EventTime(*e)) > FailedCreateFresh {
			continue
		}
		if latest == nil || EventTime(*e).After(EventTime(*latest)) {
			latest = e
		}
	}
	if latest == nil {
		return nil
	}
	what := strings.ToLower(latest.InvolvedObject.Kind) + " " + latest.InvolvedObject.Name
	return &Problem{Reason: v1.ReasonFailedCreate, Message: bounded(what+" cannot create its pods or StatefulSets: "+
		strings.TrimSpace(latest.Message)+" (fix the spec or the namespace's admission rules; kubectl llm describe shows the events)", MaxReasonLength*2)}
}
