package status

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// RolloutFailedError is the error RolloutStatus returns when waiting longer cannot help: the
// rollout exceeded its progress deadline or the spec cannot be served. `rollout status` exits with
// its own code for it.
type RolloutFailedError struct {
	Name   string
	Reason string // ProgressDeadlineExceeded or InvalidSpec
	Detail string // the condition's message
}

func (e *RolloutFailedError) Error() string {
	switch e.Reason {
	case v1.ReasonInvalidSpec:
		return fmt.Sprintf("serving %q cannot be rolled out: its spec cannot be served: %s", e.Name, e.Detail)
	default:
		return fmt.Sprintf("serving %q exceeded its progress deadline: %s", e.Name, e.Detail)
	}
}

// RolloutStatus reads a stored ModelServing the way `kubectl rollout status` reads a Deployment:
// a sentence a person can read, whether there is nothing left to wait for, and a
// *RolloutFailedError when waiting cannot help. It checks, in order:
//
//  1. Is the spec error current? The operator does not move status.observedGeneration for a spec it
//     cannot serve, but it stamps the Degraded condition with the generation it judged, so an
//     InvalidSpec for this generation is final even though the generation is "not observed".
//  2. Was this generation observed? If not, the rest of the status describes an older spec.
//  3. Did the rollout exceed its progress deadline?
//  4. Is it complete (Progressing reason RolloutComplete), or held as a canary at its partition
//     (CanaryHeld)? Both are done.
//  5. Otherwise: what it waits for, from the group counts.
func RolloutStatus(ms *v1.ModelServing) (message string, done bool, err error) {
	conds := ms.Status.Conditions
	if d := meta.FindStatusCondition(conds, v1.ConditionDegraded); d != nil && d.Status == metav1.ConditionTrue &&
		d.Reason == v1.ReasonInvalidSpec && d.ObservedGeneration >= ms.Generation {
		return "", false, &RolloutFailedError{Name: ms.Name, Reason: v1.ReasonInvalidSpec, Detail: d.Message}
	}
	if !OfSpec(ms) {
		return fmt.Sprintf("Waiting for rollout to finish: the operator has not yet observed generation %d of serving %q (it last acted on %d)...\n",
			ms.Generation, ms.Name, ms.Status.ObservedGeneration), false, nil
	}
	p := meta.FindStatusCondition(conds, v1.ConditionProgressing)
	if p != nil && p.Reason == v1.ReasonProgressDeadlineExceeded {
		return "", false, &RolloutFailedError{Name: ms.Name, Reason: v1.ReasonProgressDeadlineExceeded, Detail: p.Message}
	}
	if p != nil && p.Status == metav1.ConditionTrue {
		switch p.Reason {
		case v1.ReasonRolloutComplete:
			return fmt.Sprintf("serving %q successfully rolled out: %s\n", ms.Name, p.Message), true, nil
		case v1.ReasonCanaryHeld:
			return fmt.Sprintf("serving %q canary is ready and held at %s: %s\n", ms.Name, partitionsOf(ms), p.Message), true, nil
		}
	}
	return "Waiting for rollout to finish: " + waitingFor(ms, p) + "...\n", false, nil
}

// waitingFor says what a rollout in progress waits for, from the stored counts.
func waitingFor(ms *v1.ModelServing, p *metav1.Condition) string {
	st := ms.Status
	desired := DesiredGroups(ms.Spec)
	var msg string
	switch {
	case p != nil && p.Reason == v1.ReasonRolloutPaused:
		msg = fmt.Sprintf("rollout is paused (resume with kubectl llm rollout resume %s)", ms.Name)
	case st.UpdatedReplicas < desired:
		msg = fmt.Sprintf("%d of %d groups updated", st.UpdatedReplicas, desired)
	case st.Replicas > st.UpdatedReplicas:
		msg = fmt.Sprintf("%d old group(s) pending termination", st.Replicas-st.UpdatedReplicas)
	case st.ReadyReplicas < desired:
		msg = fmt.Sprintf("%d of %d updated groups ready", st.ReadyReplicas, desired)
	default:
		msg = fmt.Sprintf("%d of %d groups ready, waiting for the operator to confirm", st.ReadyReplicas, desired)
	}
	if pl := st.Plan; pl != nil && pl.Steps > 0 && pl.Revision == st.UpdateRevision {
		msg += fmt.Sprintf(" (step %d of %d)", pl.Step, pl.Steps)
	}
	if d := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionDegraded); d != nil && d.Status == metav1.ConditionTrue {
		msg += fmt.Sprintf(" (degraded, %s: %s)", d.Reason, d.Message)
	}
	return msg
}

// partitionsOf names where a canary is held: the serving's partition, or with roles each role's
// (spec.rollout.partition stays 0 with roles: a partition is a group index of one role), in
// v1.RoleNames order, e.g. "prefill partition 1, decode partition 5".
func partitionsOf(ms *v1.ModelServing) string {
	if len(ms.Spec.Roles) == 0 {
		return fmt.Sprintf("partition %d", ptrOr(ms.Spec.Rollout.Partition, 0))
	}
	var parts []string
	for _, name := range v1.RoleNames() {
		r := ms.Spec.Role(name)
		if r == nil {
			continue
		}
		var p int32
		if r.Rollout != nil {
			p = ptrOr(r.Rollout.Partition, 0)
		}
		parts = append(parts, fmt.Sprintf("%s partition %d", name, p))
	}
	return strings.Join(parts, ", ")
}

// OfSpec tells whether the serving's status is the operator's report on the spec as it is now
// (observedGeneration caught up with generation): views say so rather than show an older report.
func OfSpec(ms *v1.ModelServing) bool { return ms.Status.ObservedGeneration >= ms.Generation }
