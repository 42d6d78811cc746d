package status

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// Input is everything the summary is computed from.
type Input struct {
	Serving *v1.ModelServing
	// LWS is the serving's LeaderWorkerSet; nil when it does not exist (yet).
	LWS *lwsv1.LeaderWorkerSet
	// Pods are the pods of the serving (any revision).
	Pods []corev1.Pod
	// UpdateRevision is the revision of the current spec.
	UpdateRevision string
	// TemplateRevision is the revision whose template the LWS carries: the update revision unless
	// the rollout is paused or a Recreate is stopping the old groups.
	TemplateRevision string
	// SpecError, when set, is why the operator cannot serve the spec (a terminal error).
	SpecError error
	// Problems the caller found outside the pods (a name conflict, a refused apply), most
	// important first: the first one becomes the Degraded condition.
	Problems []Problem
	// Events are the recent events of the serving's LeaderWorkerSet and StatefulSets: a fresh
	// FailedCreate while groups miss pods becomes the Degraded condition.
	Events []corev1.Event
	// Roles are what was observed of each role of a serving with spec.roles (its LWS, pods and
	// events); the LWS, Pods and Events above are then unused. Nil without roles.
	Roles []RoleInput
	// Plan is the lockstep planner's decision for a serving with roles, when the caller planned
	// (the operator does); the zero value otherwise.
	Plan RolePlan
	// Unsettled, when set, says why the leader StatefulSet is not done rolling although the
	// pods show every group ready on the update revision (LeaderSetUnsettled of one read from the
	// API server): the rollout is not done yet. The operator reads it when it is about to call a
	// rollout done; a view leaves it empty.
	Unsettled string
	// UnsettledWatched says that what Unsettled waits for comes as an event of an object the
	// operator watches (its Service's creation): no need to look again on a timer.
	UnsettledWatched bool
	Now              time.Time
}

// Summary is the state of a serving, as every view shows it.
type Summary struct {
	Desired  int32 // spec.replicas
	Replicas int32 // groups that exist, surge included
	Ready    int32 // groups whose every pod is ready
	Updated  int32 // groups on the update revision (and restart id)
	// MaxUnavailable is spec.rollout.maxUnavailable resolved against Desired.
	MaxUnavailable int32
	Groups         []Group
	// Done is true when there is nothing left to wait for: the rollout completed, or a canary
	// reached its partition. RolloutStatus reads the same from a stored status.
	Done bool
	// RestartDone is true when every group runs the current restart id.
	RestartDone bool
	// Progressed is true when the counts moved since the stored status (or the revision changed).
	Progressed bool
	// Settling says why a rollout whose groups the pods show all ready on the update revision is
	// not done yet: its leader StatefulSet is not done rolling (Input.Unsettled). "" otherwise.
	Settling string
	// SettlingWatched is Input.UnsettledWatched while Settling is set: the end of the wait comes
	// as a watched object's event.
	SettlingWatched bool
	// DeadlineAt is when the rollout exceeds its progress deadline if nothing moves before;
	// zero when nothing is waited for (done, paused, held at a canary, already stalled, or a
	// spec that cannot be served). The operator looks again then, and at no other time.
	DeadlineAt time.Time
	Phase      v1.Phase
	// Role is the role this summary is of, in Roles; "" for a serving's.
	Role v1.RoleName
	// Roles are the summaries of each role of a serving with spec.roles, in v1.RoleNames order;
	// the counts above are their sums and Groups is empty (each role numbers its own groups).
	Roles     []Summary
	Available metav1.Condition
	Progress  metav1.Condition
	Degraded  metav1.Condition
}

// Conditions are the three conditions, in a stable order.
func (s Summary) Conditions() []metav1.Condition {
	return []metav1.Condition{s.Available, s.Progress, s.Degraded}
}

// Summarize computes the summary of a serving from what the operator (or a view) observed.
func Summarize(in Input) Summary {
	ms := in.Serving
	if len(ms.Spec.Roles) > 0 {
		return summarizeRoles(in)
	}
	spec := ms.Spec
	desired := ptrOr(spec.Replicas, 1)
	size := int(spec.GroupSize)
	if size < 1 {
		size = 1
	}
	restartID := ""
	if spec.Restart != nil {
		restartID = spec.Restart.ID
	}
	s := Summary{Desired: desired, Groups: BuildGroups(in.Pods, int(desired), size, in.Now)}
	for _, g := range s.Groups {
		if !g.Exists() {
			continue // a desired group that does not exist yet
		}
		s.Replicas++
		if g.Ready() {
			s.Ready++
		}
		if !g.Surge && g.Updated(in.UpdateRevision, restartID) {
			s.Updated++
		}
	}
	s.MaxUnavailable = ResolveMaxUnavailable(spec.Rollout, desired)
	partition := ptrOr(spec.Rollout.Partition, 0)
	if partition > desired {
		partition = desired
	}

	lwsCurrent := lwsObserved(in.LWS)
	allUpdated := s.Updated == desired
	settled := s.Replicas == desired && s.Ready == desired
	canaryHeld := partition > 0 && !allUpdated && updatedFrom(s.Groups, int(partition), in.UpdateRevision, restartID) &&
		readyFrom(s.Groups, int(partition)) && s.Replicas == desired
	paused := spec.Rollout.Paused && in.TemplateRevision != in.UpdateRevision
	s.RestartDone = restartID == "" || (allUpdated && settled)
	if allUpdated && settled {
		s.Settling, s.SettlingWatched = in.Unsettled, in.Unsettled != "" && in.UnsettledWatched
	}
	s.Done = in.SpecError == nil && lwsCurrent && !paused && ((allUpdated && settled && s.Settling == "") || canaryHeld)

	prev := ms.Status
	s.Progressed = prev.UpdateRevision != in.UpdateRevision || prev.Replicas != s.Replicas ||
		prev.ReadyReplicas != s.Ready || prev.UpdatedReplicas != s.Updated || groupBecameReady(prev.Groups, s.Groups)
	deadline, stalled := s.progressDeadline(in, paused)

	s.Available = availableCondition(s)
	s.Degraded = degradedCondition(s, in)
	s.Progress = progressingCondition(s, in, paused, canaryHeld, stalled, deadline, partition)
	s.Phase = phase(s, in)
	return s
}

// groupBecameReady reports a group ready now that the stored status shows not ready, or ready on
// another revision. That is progress the totals can hide: a new group becoming ready while the
// rolling update takes the next old group down, between two passes (an operator that was away
// while it happened), leaves every count where it was.
func groupBecameReady(stored []v1.GroupStatus, groups []Group) bool {
	if len(stored) == 0 {
		return false // no groups recorded (a status of an older operator): the counts decide
	}
	before := make(map[int]v1.GroupStatus, len(stored))
	last := -1
	for _, g := range stored {
		before[int(g.Index)] = g
		last = max(last, int(g.Index))
	}
	for _, g := range groups {
		if !g.Ready() {
			continue
		}
		was, ok := before[g.Index]
		switch {
		case !ok && len(stored) >= v1.MaxStatusGroups && g.Index > last:
			continue // beyond the groups the status holds: the counts decide
		case !ok, !was.Ready, was.Revision != g.Revision:
			return true
		}
	}
	return false
}

// progressDeadline is the serving's progress deadline and whether it passed without progress;
// it sets DeadlineAt when something is waited for (s.Done and s.Progressed are already set).
func (s *Summary) progressDeadline(in Input, paused bool) (time.Duration, bool) {
	spec, prev := in.Serving.Spec, in.Serving.Status
	deadline := 30 * time.Minute
	if spec.Rollout.ProgressDeadline != nil {
		deadline = spec.Rollout.ProgressDeadline.Duration
	}
	stalled := !s.Done && !paused && !s.Progressed && prev.LastProgressTime != nil &&
		in.Now.Sub(prev.LastProgressTime.Time) > deadline
	if !s.Done && !paused && !stalled && in.SpecError == nil {
		last := in.Now
		if !s.Progressed && prev.LastProgressTime != nil {
			last = prev.LastProgressTime.Time
		}
		s.DeadlineAt = last.Add(deadline)
	}
	return deadline, stalled
}

// ResolveMaxUnavailable turns spec.rollout.maxUnavailable into groups, rounding down like LWS, and
// never 0 when maxSurge is 0 too (LWS then moves one group at a time).
func ResolveMaxUnavailable(r v1.RolloutSpec, desired int32) int32 {
	mu := scaled(r.MaxUnavailable, 1, desired, false)
	if mu == 0 && scaled(r.MaxSurge, 0, desired, true) == 0 {
		mu = 1
	}
	return mu
}

// ResolveMaxSurge turns spec.rollout.maxSurge into groups, rounding up like LWS.
func ResolveMaxSurge(r v1.RolloutSpec, desired int32) int32 {
	return scaled(r.MaxSurge, 0, desired, true)
}

func scaled(v *intstr.IntOrString, def int, desired int32, roundUp bool) int32 {
	x := intstr.FromInt(def)
	if v != nil {
		x = *v
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&x, int(desired), roundUp)
	if err != nil || n < 0 {
		return int32(def)
	}
	return int32(n)
}

func availableCondition(s Summary) metav1.Condition {
	c := metav1.Condition{Type: v1.ConditionAvailable}
	switch {
	case s.Desired == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1.ReasonNoGroups, "no groups desired"
	case s.Ready >= s.Desired-s.MaxUnavailable && s.Ready > 0:
		c.Status, c.Reason = metav1.ConditionTrue, v1.ReasonGroupsAvailable
		c.Message = fmt.Sprintf("%d of %d groups ready (at most %d may be unavailable)", s.Ready, s.Desired, s.MaxUnavailable)
	default:
		c.Status, c.Reason = metav1.ConditionFalse, v1.ReasonGroupsUnavailable
		c.Message = fmt.Sprintf("%d of %d groups ready, fewer than the %d required", s.Ready, s.Desired, max(s.Desired-s.MaxUnavailable, 1))
	}
	return c
}

func degradedCondition(s Summary, in Input) metav1.Condition {
	c := metav1.Condition{Type: v1.ConditionDegraded, Status: metav1.ConditionTrue}
	if in.SpecError != nil {
		c.Reason, c.Message = v1.ReasonInvalidSpec, bounded(in.SpecError.Error(), maxConditionMessage)
		return c
	}
	problems := in.Problems
	if p := failedCreate(in.Events, s.Groups, in.Now); p != nil {
		problems = append(problems[:len(problems):len(problems)], *p)
	}
	if len(problems) > 0 {
		c.Reason, c.Message = problems[0].Reason, problems[0].Message
		for _, p := range problems[1:] {
			c.Message += "; also " + p.Reason + ": " + p.Message
		}
		c.Message = bounded(c.Message, maxConditionMessage)
		return c
	}
	var gpu, unsched, failing, holding []string
	surgeShort := false
	for _, g := range s.Groups {
		scheduled, starved := 0, 0
		for _, p := range g.Pods {
			where := fmt.Sprintf("group %d %s", g.Index, p.Role())
			if p.Node != "" {
				scheduled++
			}
			switch {
			case p.State == PodPending && strings.Contains(p.Reason, insufficientGPU):
				gpu = append(gpu, where)
				starved++
				surgeShort = surgeShort || g.Surge
			case p.State == PodPending && strings.HasPrefix(p.Reason, "FailedScheduling"):
				unsched = append(unsched, where+": "+strings.TrimPrefix(p.Reason, "FailedScheduling: "))
			case p.State == PodFailing:
				failing = append(failing, where+": "+p.Reason)
			}
		}
		if starved > 0 && scheduled > 0 {
			holding = append(holding, fmt.Sprint(g.Index))
		}
	}
	switch {
	case len(gpu) > 0:
		c.Reason = v1.ReasonInsufficientGPU
		c.Message = fmt.Sprintf("%s cannot be scheduled: %s", listShort(gpu), insufficientGPU)
		switch {
		case len(holding) > 0:
			c.Message += fmt.Sprintf("; group(s) %s hold GPUs while their other pods wait (LeaderWorkerSet does not gang-schedule): "+
				"add GPU nodes, lower spec.replicas, or use a gang scheduler through spec.scheduling.schedulerName", strings.Join(holding, ", "))
		case surgeShort:
			c.Message += "; a surge group needs a whole group of spare GPUs: free GPUs or set spec.rollout.maxSurge to 0"
		default:
			c.Message += "; add GPU nodes or lower spec.replicas"
		}
	case len(unsched) > 0:
		c.Reason, c.Message = v1.ReasonUnschedulable, "cannot be scheduled: "+listShort(unsched)
	case len(failing) > 0:
		c.Reason, c.Message = v1.ReasonGroupsFailing, listShort(failing)
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1.ReasonAsExpected, "no group is failing"
	}
	return c
}

func progressingCondition(s Summary, in Input, paused, canaryHeld, stalled bool, deadline time.Duration, partition int32) metav1.Condition {
	c := metav1.Condition{Type: v1.ConditionProgressing, Status: metav1.ConditionTrue}
	switch {
	case in.SpecError != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1.ReasonInvalidSpec, "the spec cannot be served: fix it to continue"
	case paused:
		c.Status, c.Reason = metav1.ConditionUnknown, v1.ReasonRolloutPaused
		c.Message = fmt.Sprintf("rollout paused: revision %s waits; resume with kubectl llm rollout resume %s", in.UpdateRevision, in.Serving.Name)
	case stalled:
		c.Status, c.Reason = metav1.ConditionFalse, v1.ReasonProgressDeadlineExceeded
		c.Message = fmt.Sprintf("no progress for more than %s: %s", deadline, progressSentence(s))
	case canaryHeld:
		c.Reason = v1.ReasonCanaryHeld
		c.Message = fmt.Sprintf("canary: groups %d and above run revision %s (%d of %d groups); promote with kubectl llm canary promote %s",
			partition, in.UpdateRevision, s.Updated, s.Desired, in.Serving.Name)
	case s.Done:
		c.Reason = v1.ReasonRolloutComplete
		c.Message = fmt.Sprintf("%d of %d groups ready on revision %s", s.Ready, s.Desired, in.UpdateRevision)
	case s.Settling != "":
		switch {
		case restartOnly(in):
			c.Reason = v1.ReasonRestarting
		case rolloutUnfinished(in):
			c.Reason = v1.ReasonRollingOut
		default:
			c.Reason = v1.ReasonScaling
		}
		c.Message = bounded(progressSentence(s)+"; not done yet: "+s.Settling, maxConditionMessage)
	case s.Replicas > 0 && restartOnly(in):
		// Until every group is restarted and ready again.
		c.Reason, c.Message = v1.ReasonRestarting, progressSentence(s)
	case s.Replicas > 0 && in.Serving.Status.UpdateRevision != "" && rollingOut(s, in):
		c.Reason, c.Message = v1.ReasonRollingOut, progressSentence(s)
	default:
		c.Reason, c.Message = v1.ReasonScaling, progressSentence(s)
	}
	return c
}

// lwsObserved says whether the LWS controller has acted on the LeaderWorkerSet's latest spec, as
// far as the pods and the leader StatefulSet cannot tell: its status says it observed that
// generation, or the LeaderWorkerSet is still at its first generation, with nothing before it
// that its controller could still be acting on: whether it made the groups is for the pods and the
// leader StatefulSet to say (Input.Unsettled). Its status can trail by a minute when its controller
// is busy (the first status write of each of a burst of 1000 LeaderWorkerSets waited behind the
// StatefulSets of the others), and a new serving whose groups were all ready waited for it.
func lwsObserved(lws *lwsv1.LeaderWorkerSet) bool {
	return lws != nil && (lws.Status.ObservedGeneration >= lws.Generation || lws.Generation == 1)
}

// rollingOut tells a rollout (groups move from one revision to another) from groups being made
// on the one revision (a new serving's, or a scale up's): the current revision is not the update
// revision yet, or groups short of the desired ones run another revision. A rollout stays one
// until every group is updated and ready: said Scaling once every group was on the update
// revision, the reason went back and forth at the last group (RollingOut while its pods were
// replaced, Scaling once its new leader was there), a status write each time, and a false
// Scaling in between. A new serving whose groups come up one by one is Scaling, as it is while
// it settles.
func rollingOut(s Summary, in Input) bool {
	return rolloutUnfinished(in) || (s.Updated < s.Desired && s.Updated < s.Replicas)
}

// rolloutUnfinished: the serving's status still says another revision than the update revision is
// current (it moves once a rollout is done).
func rolloutUnfinished(in Input) bool {
	cur := in.Serving.Status.CurrentRevision
	return cur != "" && cur != in.UpdateRevision
}

// restartOnly is true when the groups wait for a new restart id, not for a new revision.
func restartOnly(in Input) bool {
	return in.Serving.Spec.Restart != nil && in.Serving.Status.RestartID != in.Serving.Spec.Restart.ID &&
		in.Serving.Status.CurrentRevision == in.UpdateRevision
}

func progressSentence(s Summary) string {
	msg := fmt.Sprintf("%d of %d groups updated, %d of %d ready", s.Updated, s.Desired, s.Ready, s.Desired)
	if extra := s.Replicas - s.Desired; extra > 0 {
		msg += fmt.Sprintf(", %d surge group(s)", extra)
	}
	return msg
}

func phase(s Summary, in Input) v1.Phase {
	switch {
	case in.SpecError != nil:
		return v1.PhaseFailed
	case s.Degraded.Status == metav1.ConditionTrue:
		return v1.PhaseDegraded
	case s.Progress.Reason == v1.ReasonProgressDeadlineExceeded:
		return v1.PhaseDegraded
	case s.Done && s.Progress.Reason == v1.ReasonRolloutComplete:
		return v1.PhaseReady
	case s.Ready == 0 && s.Desired > 0:
		return v1.PhasePending
	default:
		return v1.PhaseProgressing
	}
}

func updatedFrom(groups []Group, from int, revision, restartID string) bool {
	for _, g := range groups {
		if !g.Surge && g.Index >= from && !g.Updated(revision, restartID) {
			return false
		}
	}
	return true
}

func readyFrom(groups []Group, from int) bool {
	for _, g := range groups {
		if g.Index >= from && !g.Ready() {
			return false
		}
	}
	return true
}

func allMissing(g Group) bool {
	for _, p := range g.Pods {
		if p.State != PodMissing {
			return false
		}
	}
	return true
}

func listShort(items []string) string {
	const show = 3
	if len(items) <= show {
		return bounded(strings.Join(items, "; "), maxConditionMessage)
	}
	return bounded(strings.Join(items[:show], "; "), maxConditionMessage) + fmt.Sprintf("; and %d more", len(items)-show)
}

// maxConditionMessage keeps condition messages well within metav1.Condition's 32768 bytes.
const maxConditionMessage = 4096

// DesiredGroups is how many groups the spec asks for: spec.replicas, or with spec.roles (where
// spec.replicas stays 1) every role's spec.roles[].replicas; an unset count is its default, 1.
// It is what the summary's Desired is once the operator reports, for views of a serving it has
// not reported yet.
func DesiredGroups(spec v1.ModelServingSpec) int32 {
	if len(spec.Roles) == 0 {
		return ptrOr(spec.Replicas, 1)
	}
	var n int32
	for _, r := range spec.Roles {
		n += ptrOr(r.Replicas, 1)
	}
	return n
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
