package operator

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// DefaultStatusDetailInterval is how often at most a serving's status is written for a change of
// detail alone (see StatusDetailOnly).
const DefaultStatusDetailInterval = time.Second

// StatusDetailOnly reports whether next differs from prev only in detail: a group's reason, since
// and ready pods, a condition's message, the plan's message. Counts, readiness, phase, conditions'
// status and reason, revisions, observedGeneration and the plan's step are never detail: a change
// of any of them is written at once.
func StatusDetailOnly(prev, next v1.ModelServingStatus) bool {
	return equality.Semantic.DeepEqual(withoutDetail(prev), withoutDetail(next))
}

func withoutDetail(s v1.ModelServingStatus) v1.ModelServingStatus {
	out := *s.DeepCopy()
	clearGroups := func(gs []v1.GroupStatus) {
		for i := range gs {
			gs[i].Reason, gs[i].Since, gs[i].ReadyPods = "", nil, 0
		}
	}
	clearGroups(out.Groups)
	for i := range out.Roles {
		clearGroups(out.Roles[i].Groups)
	}
	for i := range out.Conditions {
		out.Conditions[i].Message = ""
	}
	if out.Plan != nil {
		out.Plan.Message = ""
	}
	return out
}

// statusDetailWait is how long a pass must wait before it writes next over prev: 0 when the
// change is more than detail or the serving's status was last written at least the interval ago
// (or never by this process); otherwise the rest of the interval. While a burst of groups starts,
// each pod's every transition (scheduled, pulling, started…) is then not a write of its own.
func (r *Reconciler) statusDetailWait(key types.NamespacedName, prev, next v1.ModelServingStatus, now time.Time) time.Duration {
	last, ok := r.statusWritten.Load(key)
	if !ok || !StatusDetailOnly(prev, next) {
		return 0
	}
	interval := r.StatusDetailInterval
	if interval == 0 {
		interval = DefaultStatusDetailInterval
	}
	if elapsed := now.Sub(last.(ownStatus).at); elapsed < interval {
		return interval - elapsed
	}
	return 0
}
