package status

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// RoleInput is what was observed of one role of a serving with spec.roles.
type RoleInput struct {
	Name v1.RoleName
	// LWS is the role's LeaderWorkerSet (<serving>-<role>); nil when it does not exist (yet).
	LWS *lwsv1.LeaderWorkerSet
	// Pods are the role's pods (any revision).
	Pods []corev1.Pod
	// Events are the FailedCreate events of the role's LeaderWorkerSet and StatefulSets.
	Events []corev1.Event
	// Unsettled and UnsettledWatched are Input's, of the role's LeaderWorkerSet.
	Unsettled        string
	UnsettledWatched bool
}

// RolePlan is what the lockstep planner (pkg/roleplan) decided for the roles, as plain values:
// this package does not plan, it reports the plan.
type RolePlan struct {
	// Step and Steps are the planned step and the steps of the rollout (0 when none is under way).
	Step, Steps int
	// State is roleplan.State: Complete, Progressing, Waiting, Paused or CanaryHeld.
	State string
	// Why says what holds the plan ("prefill: 0 of 1 new groups ready").
	Why string
}

// Planner states the summary reads (roleplan.State's values).
const (
	planPaused     = "Paused"
	planCanaryHeld = "CanaryHeld"
)

// summarizeRoles is the summary of a serving with roles: each role is summarized as the
// single-role serving it is (spec.ForRole, its LWS and pods, the counts its status.roles entry
// recorded) and the serving's conditions sum them up: Available when every role is, Degraded with
// the first failing role's reason (named), Progressing with the planner's step and what it waits for.
func summarizeRoles(in Input) Summary {
	ms := in.Serving
	prev := ms.Status
	s := Summary{RestartDone: true, Done: in.SpecError == nil}
	allDone := true
	for _, name := range v1.RoleNames() {
		spec, ok := ms.Spec.ForRole(name)
		if !ok {
			continue
		}
		ri := roleInputOf(in.Roles, name)
		rms := &v1.ModelServing{ObjectMeta: ms.ObjectMeta, Spec: spec, Status: roleStatusBase(prev, name)}
		template := TemplateRevision(ri.LWS)
		if template == "" {
			template = in.UpdateRevision
		}
		rs := Summarize(Input{Serving: rms, LWS: ri.LWS, Pods: ri.Pods, Events: ri.Events,
			UpdateRevision: in.UpdateRevision, TemplateRevision: template,
			Unsettled: ri.Unsettled, UnsettledWatched: ri.UnsettledWatched, Now: in.Now})
		rs.Role, rs.DeadlineAt = name, time.Time{} // the serving has one deadline
		for i := range rs.Groups {
			rs.Groups[i].Role = name
		}
		s.Desired += rs.Desired
		s.Replicas += rs.Replicas
		s.Ready += rs.Ready
		s.Updated += rs.Updated
		s.MaxUnavailable += rs.MaxUnavailable
		s.RestartDone = s.RestartDone && rs.RestartDone
		s.Progressed = s.Progressed || rs.Progressed
		allDone = allDone && rs.Done
		s.Roles = append(s.Roles, rs)
	}
	s.Progressed = s.Progressed || prev.UpdateRevision != in.UpdateRevision || len(prev.Roles) != len(s.Roles)
	paused := ms.Spec.Rollout.Paused && (in.Plan.State == planPaused || (in.Plan.State == "" && s.Updated < s.Desired))
	canaryHeld := in.Plan.State == planCanaryHeld
	if !canaryHeld && allDone {
		for _, rs := range s.Roles {
			canaryHeld = canaryHeld || rs.Progress.Reason == v1.ReasonCanaryHeld
		}
	}
	s.Done = s.Done && !paused && (allDone || canaryHeld)
	deadline, stalled := s.progressDeadline(in, paused)

	s.Available = rolesAvailable(s)
	s.Degraded = rolesDegraded(s, in)
	s.Progress = rolesProgressing(s, in, paused, canaryHeld, stalled, deadline)
	s.Phase = phase(s, in)
	return s
}

func roleInputOf(roles []RoleInput, name v1.RoleName) RoleInput {
	for _, r := range roles {
		if r.Name == name {
			return r
		}
	}
	return RoleInput{Name: name}
}

// roleStatusBase is what a role's summary compares with: the counts its status.roles entry
// recorded and the serving's revisions, restart (with the role's) and progress time.
func roleStatusBase(prev v1.ModelServingStatus, name v1.RoleName) v1.ModelServingStatus {
	out := v1.ModelServingStatus{UpdateRevision: prev.UpdateRevision, CurrentRevision: prev.CurrentRevision,
		RestartID: prev.RestartID, LastProgressTime: prev.LastProgressTime}
	for _, r := range prev.Roles {
		if r.Name == name {
			out.Replicas, out.ReadyReplicas, out.UpdatedReplicas, out.ReadyGroups = r.Replicas, r.ReadyReplicas, r.UpdatedReplicas, r.ReadyGroups
			out.Groups = r.Groups
			// The role's pods are created for both ids (v1.RoleRestartID): so is its record.
			out.RestartID = v1.RoleRestartID(prev.RestartID, r.RestartID)
		}
	}
	return out
}

func rolesAvailable(s Summary) metav1.Condition {
	c := metav1.Condition{Type: v1.ConditionAvailable}
	if s.Desired == 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1.ReasonNoGroups, "no groups desired"
		return c
	}
	for _, rs := range s.Roles {
		if rs.Available.Status != metav1.ConditionTrue {
			// A revision cannot serve without every role: one role short makes the serving short.
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1.ReasonGroupsUnavailable, string(rs.Role)+": "+rs.Available.Message
			return c
		}
	}
	c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1.ReasonGroupsAvailable, rolesCounts(s, "%s %d of %d", func(r Summary) int32 { return r.Ready })+" groups ready"
	return c
}

func rolesDegraded(s Summary, in Input) metav1.Condition {
	// The serving's own problems (spec, conflicts, refused writes) come first, as without roles.
	c := degradedCondition(Summary{}, Input{SpecError: in.SpecError, Problems: in.Problems, Now: in.Now})
	if c.Status == metav1.ConditionTrue {
		return c
	}
	for _, rs := range s.Roles {
		if rs.Degraded.Status == metav1.ConditionTrue {
			c.Status, c.Reason = metav1.ConditionTrue, rs.Degraded.Reason
			c.Message = bounded(string(rs.Role)+": "+rs.Degraded.Message, maxConditionMessage)
			return c
		}
	}
	return c
}

func rolesProgressing(s Summary, in Input, paused, canaryHeld, stalled bool, deadline time.Duration) metav1.Condition {
	c := metav1.Condition{Type: v1.ConditionProgressing, Status: metav1.ConditionTrue}
	name := in.Serving.Name
	switch {
	case in.SpecError != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1.ReasonInvalidSpec, "the spec cannot be served: fix it to continue"
	case paused:
		c.Status, c.Reason = metav1.ConditionUnknown, v1.ReasonRolloutPaused
		c.Message = fmt.Sprintf("rollout paused%s: revision %s waits (%s); resume with kubectl llm rollout resume %s",
			stepOf(in.Plan), in.UpdateRevision, rolesSentence(s), name)
	case stalled:
		c.Status, c.Reason = metav1.ConditionFalse, v1.ReasonProgressDeadlineExceeded
		c.Message = fmt.Sprintf("no progress for more than %s: %s%s", deadline, rolesSentence(s), whyOf(in.Plan))
	case canaryHeld:
		c.Reason = v1.ReasonCanaryHeld
		why := in.Plan.Why
		if why == "" {
			why = "canary: " + rolesCounts(s, "%s %d of %d", func(r Summary) int32 { return r.Updated }) + " groups on the new revision"
		}
		c.Message = fmt.Sprintf("%s (revision %s); promote with kubectl llm canary promote %s", why, in.UpdateRevision, name)
	case s.Done:
		c.Reason = v1.ReasonRolloutComplete
		c.Message = rolesCounts(s, "%s %d of %d", func(r Summary) int32 { return r.Ready }) + " groups ready on revision " + in.UpdateRevision
	default:
		c.Reason = v1.ReasonScaling
		for _, rs := range s.Roles {
			if rs.Progress.Reason == v1.ReasonRollingOut || rs.Progress.Reason == v1.ReasonRestarting && c.Reason != v1.ReasonRollingOut {
				c.Reason = rs.Progress.Reason
			}
		}
		c.Message = rolesSentence(s) + whyOf(in.Plan)
		if in.Plan.Steps > 0 {
			c.Message = fmt.Sprintf("step %d of %d: %s", in.Plan.Step, in.Plan.Steps, c.Message)
		}
	}
	c.Message = bounded(c.Message, maxConditionMessage)
	return c
}

// rolesSentence is each role's progress: "prefill 1 of 2 groups updated, 1 of 2 ready; decode …".
func rolesSentence(s Summary) string {
	parts := make([]string, 0, len(s.Roles))
	for _, rs := range s.Roles {
		part := string(rs.Role) + " " + progressSentence(rs)
		if rs.Settling != "" {
			part += " (not done yet: " + rs.Settling + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

// rolesCounts formats one count of every role: "prefill 2 of 2, decode 6 of 6".
func rolesCounts(s Summary, format string, count func(Summary) int32) string {
	parts := make([]string, 0, len(s.Roles))
	for _, rs := range s.Roles {
		parts = append(parts, fmt.Sprintf(format, rs.Role, count(rs), rs.Desired))
	}
	return strings.Join(parts, ", ")
}

func stepOf(p RolePlan) string {
	if p.Steps == 0 {
		return ""
	}
	return fmt.Sprintf(" at step %d of %d", p.Step, p.Steps)
}

func whyOf(p RolePlan) string {
	if p.Why == "" {
		return ""
	}
	return "; waiting for " + p.Why
}
