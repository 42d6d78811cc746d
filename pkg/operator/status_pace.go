package operator

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// detail: the phase, conditions' status and reason, revisions, observedGeneration, the plan's
// step and state, and readiness (a group's, the ready count, readyGroups) but in the one case
// below. A change of any of those is written at once, with whatever detail is waiting.
//
// While one rollout or restart goes on (prev and next both say so, of the same generation and
// update revision), the groups it replaces going not ready and ready again one after the other
// is its progress, and detail too: a rollout of four groups was ten status writes (two a group),
// each an API server write beside the LeaderWorkerSet's own steps. What a script waits for is
// still written at once: the rollout's end (the Progressing reason changes), Available turning
// False, a group failing (Degraded), the phase. The live view reads the pods themselves.
func StatusDetailOnly(prev, next v1.ModelServingStatus) bool {
	p, n := withoutDetail(prev), withoutDetail(next)
	if sameRollout(prev, next) {
		withoutReadiness(&p)
		withoutReadiness(&n)
	}
	return equality.Semantic.DeepEqual(p, n)
}

// sameRollout reports whether prev and next are both the status of one rollout or restart in
// progress: the Progressing condition True and RollingOut or Restarting in both, of the same
// generation and update revision.
func sameRollout(prev, next v1.ModelServingStatus) bool {
	rolling := func(s v1.ModelServingStatus) string {
		c := meta.FindStatusCondition(s.Conditions, v1.ConditionProgressing)
		if c == nil || c.Status != metav1.ConditionTrue || (c.Reason != v1.ReasonRollingOut && c.Reason != v1.ReasonRestarting) {
			return ""
		}
		return c.Reason
	}
	r := rolling(prev)
	return r != "" && r == rolling(next) && prev.ObservedGeneration == next.ObservedGeneration &&
		prev.UpdateRevision == next.UpdateRevision && prev.RestartID == next.RestartID
}

// withoutReadiness clears which groups are ready and how many, of the serving and of its roles.
func withoutReadiness(s *v1.ModelServingStatus) {
	clearGroups := func(gs []v1.GroupStatus) {
		for i := range gs {
			gs[i].Ready = false
		}
	}
	s.ReadyReplicas, s.ReadyGroups = 0, ""
	clearGroups(s.Groups)
	for i := range s.Roles {
		s.Roles[i].ReadyReplicas, s.Roles[i].ReadyGroups = 0, ""
		clearGroups(s.Roles[i].Groups)
	}
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
