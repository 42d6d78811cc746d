package operator

import v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"

// PlanInput is what the rollout planner decides from: plain values, no objects.
type PlanInput struct {
	Strategy v1.RolloutStrategyType
	Paused   bool
	Desired  int32
	// UpdateRevision is the revision of the current spec.
	UpdateRevision string
	// LWSRevision is the revision the existing LWS template carries; "" when there is no LWS.
	LWSRevision string
	// ExistingGroups counts groups (or pods) that still exist, on any revision.
	ExistingGroups int32
}

// Plan is what the LWS should carry now.
type Plan struct {
	// TemplateRevision is the revision whose pod template the LWS gets.
	TemplateRevision string
	// Replicas is the group count the LWS gets.
	Replicas int32
	// Waiting says what the plan waits for, for logs and events ("" when nothing).
	Waiting string
}

// PlanRollout decides which template and how many groups the LWS gets:
//   - no LWS yet, or the LWS already on the update revision: the update revision, desired groups;
//   - paused: the LWS keeps its revision (scaling still applies);
//   - Recreate: the old revision is scaled to zero first, and the new revision starts only
//     once no group of the old one exists;
//   - RollingUpdate: the update revision; LWS moves the groups within maxSurge/maxUnavailable.
func PlanRollout(in PlanInput) Plan {
	switch {
	case in.LWSRevision == "" || in.LWSRevision == in.UpdateRevision:
		return Plan{TemplateRevision: in.UpdateRevision, Replicas: in.Desired}
	case in.Paused:
		return Plan{TemplateRevision: in.LWSRevision, Replicas: in.Desired, Waiting: "rollout paused"}
	case in.Strategy == v1.Recreate && in.ExistingGroups > 0:
		return Plan{TemplateRevision: in.LWSRevision, Replicas: 0, Waiting: "Recreate: waiting for the old groups to stop"}
	default:
		return Plan{TemplateRevision: in.UpdateRevision, Replicas: in.Desired}
	}
}
