package status

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/roleplan"
)

// PlanInput is the rollout planner's input (pkg/roleplan) for moving what a caller observed to
// revision updateRev: each role's limits from the spec and, from the role's pods, its groups on
// updateRev (with the current restart ids), how many of those are ready, its groups on older
// revisions (or waiting for the serving's restart), and those waiting only for the role's own
// restart. The operator plans from it, and `kubectl llm rollout plan` lists the steps from it, so
// the two never count differently. A serving without roles is planned as its one role (Name "").
//
// A group whose leader is gone (being recreated) counts by where its LeaderWorkerSet will
// recreate it: on updateRev at or above the partition, else on the old one. A group on its way
// out (leaving) is not counted.
func PlanInput(o Observed, updateRev string, now time.Time) (roleplan.Input, error) {
	ms := o.Serving
	in := roleplan.Input{Strategy: ms.Spec.Rollout.Strategy, Paused: ms.Spec.Rollout.Paused,
		RollingOut: ms.Status.CurrentRevision != "" && ms.Status.CurrentRevision != updateRev}
	servingRestart := ""
	if ms.Spec.Restart != nil {
		servingRestart = ms.Spec.Restart.ID
	}
	if len(ms.Spec.Roles) == 0 {
		d := ptr.Deref(ms.Spec.Replicas, 1)
		r := roleplan.Role{Desired: d, MaxSurge: ResolveMaxSurge(ms.Spec.Rollout, d),
			MaxUnavailable: ResolveMaxUnavailable(ms.Spec.Rollout, d), Canary: roleplan.CanaryCap(d, ms.Spec.Rollout.Partition)}
		countPlanGroups(&r, o.LWS, o.Pods, int(ms.Spec.GroupSize), updateRev, servingRestart, "", now)
		in.Roles = []roleplan.Role{r}
		return in, nil
	}
	roles, err := roleplan.RolesOf(ms.Spec)
	if err != nil {
		return roleplan.Input{}, err
	}
	for i := range roles {
		r := &roles[i]
		seen := roleInputOf(o.Roles, r.Name)
		spec, _ := ms.Spec.ForRole(r.Name) // RolesOf lists the spec's roles
		restartID := ""                    // the serving's and the role's (v1.RoleRestartID)
		if spec.Restart != nil {
			restartID = spec.Restart.ID
		}
		countPlanGroups(r, seen.LWS, seen.Pods, int(spec.GroupSize), updateRev, restartID, servingRestart, now)
	}
	in.Roles = roles
	return in, nil
}

// countPlanGroups counts one role's groups into r. servingRestart is the serving's restart id for
// a role of a serving with roles, whose groups may wait for the role's own restart alone; "" for
// a serving without roles.
func countPlanGroups(r *roleplan.Role, lws *lwsv1.LeaderWorkerSet, pods []corev1.Pod, size int, updateRev, restartID, servingRestart string, now time.Time) {
	partition, replicas, liveRev := int32(0), int32(0), ""
	if lws != nil {
		replicas = ptr.Deref(lws.Spec.Replicas, 0)
		if ru := lws.Spec.RolloutStrategy.RollingUpdateConfiguration; ru != nil {
			partition = ptr.Deref(ru.Partition, 0)
		}
		liveRev = TemplateRevision(lws)
	}
	withRoles := r.Name != ""
	for _, g := range BuildGroups(pods, 0, size, now) {
		if leaving(g, r.Desired, lws != nil, replicas) {
			continue
		}
		switch {
		case g.Updated(updateRev, restartID):
			r.Updated++
			if g.Ready() {
				r.ReadyUpdated++
			}
		case withRoles && g.WaitsForRoleRestart(updateRev, servingRestart):
			r.Restarting++
		case g.Revision != "":
			r.Old++
		case lws == nil:
		case int32(g.Index) >= partition && liveRev == updateRev:
			r.Updated++
		case liveRev == updateRev && withRoles:
			// Recreated below the partition from the same revision: waiting for its restart.
			r.Restarting++
		default:
			r.Old++
		}
	}
}

// leaving reports a group on its way out, which the planner must not count: at or above the
// LWS's replicas (removed by a scale-down), or a surplus group (at or above the role's desired
// groups) whose leader is gone or going. Counted, a surplus group that stops being ready while it
// is removed would send the rollout back to the step that still had it (and the LWS up again);
// the second rule holds even when the cached LWS is older than our last apply.
func leaving(g Group, desired int32, haveLWS bool, replicas int32) bool {
	if haveLWS && int32(g.Index) >= replicas {
		return true
	}
	leader := g.Pods[0].State
	return int32(g.Index) >= desired && (leader == PodTerminating || leader == PodMissing)
}

// RolePlanOf is the planner's decision as the summary reads it (PlanStatus is the same decision
// as status.plan stores it: the two conversions of a plan live here, side by side).
func RolePlanOf(p roleplan.Plan) RolePlan {
	return RolePlan{Step: p.Step, Steps: p.Steps, State: string(p.State), Why: p.Why}
}

// PlanStatus is the planner's decision as status.plan reports it, for revision rev; nil when no
// plan was made (the spec cannot be served).
func PlanStatus(p roleplan.Plan, rev string) *v1.PlanStatus {
	if p.State == "" {
		return nil
	}
	out := &v1.PlanStatus{Revision: rev, Step: int32(p.Step), Steps: int32(p.Steps), State: p.State,
		Message: bounded(p.Why, maxPlanMessage), Restart: p.Restart}
	for _, t := range p.Roles {
		out.Roles = append(out.Roles, v1.RolePlanTarget{Name: t.Name, Replicas: t.Replicas, UpdatedReplicas: t.Updated})
	}
	return out
}

// maxPlanMessage bounds status.plan.message (its CRD MaxLength).
const maxPlanMessage = 1024
