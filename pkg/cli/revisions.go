package cli

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// Revisions as the views see them: the operator names them and reports its update revision in
// the status; the CLI reads that, and compares the spec with a recorded revision by content.

// specMatcher tells whether a recorded revision is the serving's spec as it is now, by content.
// Not by name: a name hashed here could differ from the operator's (another version of it), and
// status.updateRevision lags an edit made just before. A spec whose template does not decode
// matches no revision, so any recorded revision is then a way back.
func specMatcher(ms *v1.ModelServing) func(*appsv1.ControllerRevision) bool {
	now, err := revision.SpecOf(ms.Spec)
	return func(cr *appsv1.ControllerRevision) bool {
		if err != nil {
			return false
		}
		rs, derr := revision.Decode(cr)
		return derr == nil && revision.Same(rs, now)
	}
}

// staleNote says when the status describes an older generation than the spec: the update
// revision shown is then the one before the latest edit.
func staleNote(ms *v1.ModelServing) string {
	if ms.Status.UpdateRevision == "" || status.OfSpec(ms) {
		return ""
	}
	return fmt.Sprintf(" (of generation %d; generation %d not observed yet)", ms.Status.ObservedGeneration, ms.Generation)
}
