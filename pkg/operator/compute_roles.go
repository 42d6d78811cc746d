package operator

import (
	corev1 "k8s.io/api/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	lwsac "sigs.k8s.io/lws/client-go/applyconfiguration/leaderworkerset/v1"

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
	seen := status.Observed{Serving: ms}
	for _, ro := range obs.roles {
		seen.Roles = append(seen.Roles, status.RoleInput{Name: ro.name, LWS: ro.lws, Pods: ro.pods})
	}
	pin, err := status.PlanInput(seen, out.updateRev, in.now)
	if err != nil {
		return fail(err)
	}
	out.rolePlan = roleplan.Next(pin)
	out.plan = Plan{TemplateRevision: out.updateRev, Waiting: out.rolePlan.Why}
	for _, t := range out.rolePlan.Roles {
		out.plan.Replicas += t.Replicas
		// Built even when the name is taken: the update revision must make valid LWSs before it
		// is recorded. When the inputs are those of an earlier pass and the live LWS carries what
		// they built to, that is known without building it again (see builtLWS).
		seen := obs.role(t.Name)
		roleIn := RoleLWSInput{Serving: ms, Role: t.Name, Revision: out.updateRev, RevisionSpec: updateSpec, Target: t}
		lws, hash, err := in.built.buildRole(roleIn, seen.lws)
		if err != nil {
			return fail(err)
		}
		ri := roleIntent{name: t.Name}
		if !seen.lwsConflict {
			ri.lws, ri.hash = lws, hash
			if lws == nil {
				ri.rebuild = func() (*lwsac.LeaderWorkerSetApplyConfiguration, error) { return DesiredRoleLeaderWorkerSet(roleIn) }
			}
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
