package operator

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/pkg/roleplan"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// observedRole is what one pass read of one role of a serving with spec.roles.
type observedRole struct {
	name    v1.RoleName
	lws     *lwsv1.LeaderWorkerSet
	service *corev1.Service
	pods    []corev1.Pod
	// events are the FailedCreate events of the role's LeaderWorkerSet and StatefulSets.
	events []corev1.Event
	// lwsConflict and serviceConflict say which of the role's children must not be applied.
	lwsConflict, serviceConflict bool
}

// role is what was observed of a role; the zero value (nothing exists) when nothing was.
func (o *observed) role(name v1.RoleName) observedRole {
	for _, r := range o.roles {
		if r.name == name {
			return r
		}
	}
	return observedRole{name: name}
}

// computeRoles is compute for a serving with spec.roles: the lockstep planner (pkg/roleplan)
// decides every role's groups and partition from what the roles' pods run; each role's LWS
// carries the update revision's template (the partition keeps the groups below it where they
// are), and one revision is recorded for the whole topology.
func computeRoles(obs *observed, in computeInput, out intent, updateSpec revision.Spec) intent {
	ms := obs.serving
	fail := func(err error) intent {
		return intent{updateRev: out.updateRev, plan: out.plan, rolePlan: out.rolePlan, specErr: err}
	}
	pin, err := rolePlanInput(obs, out.updateRev, in.now)
	if err != nil {
		return fail(err)
	}
	out.rolePlan = roleplan.Next(pin)
	out.plan = Plan{TemplateRevision: out.updateRev, Waiting: out.rolePlan.Why}
	for _, t := range out.rolePlan.Roles {
		out.plan.Replicas += t.Replicas
		// Built even when the name is taken: the update revision must make valid LWSs before it
		// is recorded.
		lws, err := DesiredRoleLeaderWorkerSet(RoleLWSInput{Serving: ms, Role: t.Name, Revision: out.updateRev, RevisionSpec: updateSpec, Target: t})
		if err != nil {
			return fail(err)
		}
		seen := obs.role(t.Name)
		ri := roleIntent{name: t.Name}
		if !seen.lwsConflict {
			ri.lws = lws
		}
		if !seen.serviceConflict {
			ri.service = DesiredRoleService(ms, t.Name)
		}
		out.roles = append(out.roles, ri)
	}
	revisions, err := out.record(obs, updateSpec)
	if err != nil {
		return fail(err)
	}
	out.prune = revision.ToPrune(revisions, in.limit(), out.updateRev, ms.Status.CurrentRevision)
	return out
}

// rolePlanInput is the planner's input: each role's limits from the spec and, from the role's
// pods, its groups on the update revision (and restart ids), how many of those are ready, its
// groups on older ones (or waiting for the serving's restart), and those waiting only for the
// role's own restart. A group whose leader is gone (being recreated) counts by where the LWS
// will recreate it: on the update revision at or above the partition, else on the old one. A
// group on its way out (leaving) is not counted.
func rolePlanInput(obs *observed, updateRev string, now time.Time) (roleplan.Input, error) {
	ms := obs.serving
	roles, err := roleplan.RolesOf(ms.Spec)
	if err != nil {
		return roleplan.Input{}, err
	}
	servingRestart := ""
	if ms.Spec.Restart != nil {
		servingRestart = ms.Spec.Restart.ID
	}
	for i := range roles {
		r := &roles[i]
		seen := obs.role(r.Name)
		spec, _ := ms.Spec.ForRole(r.Name) // RolesOf lists the spec's roles
		restartID := ""                    // the serving's and the role's (v1.RoleRestartID)
		if spec.Restart != nil {
			restartID = spec.Restart.ID
		}
		partition, replicas, liveRev := int32(0), int32(0), ""
		if seen.lws != nil {
			replicas = ptr.Deref(seen.lws.Spec.Replicas, 0)
			if ru := seen.lws.Spec.RolloutStrategy.RollingUpdateConfiguration; ru != nil {
				partition = ptr.Deref(ru.Partition, 0)
			}
			liveRev = status.TemplateRevision(seen.lws)
		}
		for _, g := range status.BuildGroups(seen.pods, 0, int(spec.GroupSize), now) {
			if leaving(g, r.Desired, seen.lws != nil, replicas) {
				continue
			}
			switch {
			case g.Updated(updateRev, restartID):
				r.Updated++
				if g.Ready() {
					r.ReadyUpdated++
				}
			case g.WaitsForRoleRestart(updateRev, servingRestart):
				r.Restarting++
			case g.Revision != "":
				r.Old++
			case seen.lws == nil:
			case int32(g.Index) >= partition && liveRev == updateRev:
				r.Updated++
			case liveRev == updateRev:
				// Recreated below the partition from the same revision: waiting for its restart.
				r.Restarting++
			default:
				r.Old++
			}
		}
	}
	return roleplan.Input{
		Roles: roles, Strategy: ms.Spec.Rollout.Strategy, Paused: ms.Spec.Rollout.Paused,
		RollingOut: ms.Status.CurrentRevision != "" && ms.Status.CurrentRevision != updateRev,
	}, nil
}

// leaving reports a group on its way out, which the planner must not count: at or above the
// LWS's replicas (removed by a scale-down), or a surplus group (at or above the role's desired
// groups) whose leader is gone or going. Counted, a surplus group that stops being ready while it
// is removed would send the rollout back to the step that still had it (and the LWS up again);
// the second rule holds even when the cached LWS is older than our last apply.
func leaving(g status.Group, desired int32, haveLWS bool, replicas int32) bool {
	if haveLWS && int32(g.Index) >= replicas {
		return true
	}
	leader := g.Pods[0].State
	return int32(g.Index) >= desired && (leader == status.PodTerminating || leader == status.PodMissing)
}

// statusPlan is the planner's decision as the status reports it.
func statusPlan(p roleplan.Plan) status.RolePlan {
	return status.RolePlan{Step: p.Step, Steps: p.Steps, State: string(p.State), Why: p.Why}
}
