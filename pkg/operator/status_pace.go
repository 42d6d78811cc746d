package operator

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// DefaultStatusDetailInterval is how long a change of detail alone waits before it is written,
// and how often at most it is (see StatusDetailOnly).
const DefaultStatusDetailInterval = time.Second

// StatusDetailOnly reports whether next differs from prev only in detail: what a pod's every
// transition moves (a group's reason, since and ready pods, a condition's message, the plan's
// message) and the progress of groups being made (how many exist and are on the update revision,
// a group's revision, when progress was last made). What a user or a script acts on is never
// detail: readiness (a group's, the ready count, readyGroups), the phase, conditions' status and
// reason, revisions, observedGeneration, the plan's step and state. A change of any of those is
// written at once, with whatever detail is waiting.
func StatusDetailOnly(prev, next v1.ModelServingStatus) bool {
	return equality.Semantic.DeepEqual(withoutDetail(prev), withoutDetail(next))
}

func withoutDetail(s v1.ModelServingStatus) v1.ModelServingStatus {
	out := *s.DeepCopy()
	clearGroups := func(gs []v1.GroupStatus) {
		for i := range gs {
			gs[i].Reason, gs[i].Since, gs[i].ReadyPods, gs[i].Revision = "", nil, 0, ""
		}
	}
	out.Replicas, out.UpdatedReplicas, out.LastProgressTime = 0, 0, nil
	clearGroups(out.Groups)
	for i := range out.Roles {
		out.Roles[i].Replicas, out.Roles[i].UpdatedReplicas = 0, 0
		clearGroups(out.Roles[i].Groups)
	}
	for i := range out.Conditions {
		out.Conditions[i].Message = ""
	}
	if out.Plan != nil {
		out.Plan.Message = ""
		for i := range out.Plan.Roles {
			out.Plan.Roles[i].UpdatedReplicas = 0
		}
	}
	return out
}

// statusDetailWait is how long a pass must wait before it writes next over prev. A change that is
// more than detail, or of a serving whose status this process never wrote, is written at once
// (0). Detail waits until it has waited the interval since a pass first held it back, and the
// interval has passed since the serving's status was last written. While a group starts, each
// pod's every transition (created, scheduled, pulling, started…) is then not a write of its own:
// when the group turns ready within the interval (a pod that starts in a second), its detail is
// written with its readiness, in one write; when it takes longer (weights loading for minutes),
// the detail is shown one interval late.
func (r *Reconciler) statusDetailWait(key types.NamespacedName, prev, next v1.ModelServingStatus, now time.Time) time.Duration {
	last, ok := r.statusWritten.Load(key)
	if !ok || !StatusDetailOnly(prev, next) {
		return 0
	}
	interval := r.StatusDetailInterval
	if interval == 0 {
		interval = DefaultStatusDetailInterval
	}
	held, _ := r.detailHeld.LoadOrStore(key, now)
	due := last.(ownStatus).at.Add(interval)
	if d := held.(time.Time).Add(interval); d.After(due) {
		due = d
	}
	if now.Before(due) {
		return due.Sub(now)
	}
	return 0
}
