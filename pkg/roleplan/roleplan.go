// Package roleplan decides how the roles of a disaggregated serving (prefill and decode groups)
// move to a new revision together: at each step, how many groups of each role exist and how many
// of them are on the new revision. It owns the ratio rule: at no step does one role's share of
// ready groups on the new revision run more than one step ahead of another's, and where surge
// allows, new groups come up before old ones go. When one role cannot progress (its new groups do
// not become ready, e.g. for want of GPUs) the others wait.
//
// The plan is for one LeaderWorkerSet per role, moved by its replicas and partition: the groups
// with an index >= partition are on the new revision (Target.Partition). An old group therefore
// leaves by being replaced in place (the partition moves down), and a surge group is a new group
// added on top; surplus new groups are removed from the top once every old group is gone.
//
// It is pure (plain integers in, plain integers out, no clock, no client) and imports only the
// API package: the operator, `kubectl llm rollout plan` and the tests all call it.
package roleplan

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// Role is what the planner knows of one role: its spec, resolved to groups, and what exists.
type Role struct {
	Name v1.RoleName
	// Desired is the role's groups (spec.roles[].replicas).
	Desired int32
	// MaxSurge and MaxUnavailable are the role's limits in groups (Resolve turns a percentage into
	// groups). When both are 0, MaxUnavailable counts as 1.
	MaxSurge, MaxUnavailable int32
	// Canary caps the groups of the role on the new revision while a canary holds (replicas -
	// partition, CanaryCap); nil, or Desired or more, is no canary.
	Canary *int32

	// Updated counts the role's groups that exist on the new revision, surge groups included.
	Updated int32
	// ReadyUpdated counts those of them whose every pod is ready.
	ReadyUpdated int32
	// Old counts the role's groups that exist on older revisions. Their readiness does not change
	// the plan: an old group that is not ready is replaced all the same (a rollout is often what
	// fixes it).
	Old int32
	// Restarting counts the role's groups on the new revision that are waiting for the role's own
	// restart (spec.roles[].restart). Without a rollout under way they are replaced by the role
	// alone, within its limits, and no other role moves; during a rollout they are old groups of it.
	Restarting int32
}

// Input is one serving's roles and rollout settings.
type Input struct {
	Roles    []Role
	Strategy v1.RolloutStrategyType
	Paused   bool
	// RollingOut says a rollout began and has not completed (the serving's current revision is
	// not its update revision). Counts cannot tell the last step of a rollout with surge (every
	// old group replaced, surplus new groups still to go) from a scale-down; this says which.
	// Old groups always mean a rollout, whatever it says.
	RollingOut bool
}

// Target is the shape one role's LeaderWorkerSet should have now.
type Target struct {
	Name v1.RoleName
	// Replicas is the role's groups that should exist (the LeaderWorkerSet's replicas).
	Replicas int32
	// Updated is how many of them are on the new revision: the highest indices.
	Updated int32
}

// Partition is the LeaderWorkerSet partition that gives the target: groups below it keep the
// old revision.
func (t Target) Partition() int32 { return t.Replicas - t.Updated }

// State says what a plan is doing; the serving's status.plan.state reports it.
type State = v1.PlanState

const (
	// Complete: every role has its groups, all on the new revision and ready.
	Complete = v1.PlanComplete
	// Progressing: the targets differ from what exists; apply them.
	Progressing = v1.PlanProgressing
	// Waiting: the targets are what exists; new groups of some role are not ready yet, and every
	// role waits for them.
	Waiting = v1.PlanWaiting
	// Paused: spec.rollout.paused holds every role where it is.
	Paused = v1.PlanPaused
	// CanaryHeld: every role has its canary groups and holds there until the canary is promoted.
	CanaryHeld = v1.PlanCanaryHeld
)

// Plan is what every role should look like now.
type Plan struct {
	// Roles are the targets, in the order of Input.Roles.
	Roles []Target
	// Step is the planned step the targets belong to, of Steps. Steps counts the lockstep steps
	// (as many as the role needing the most batches of maxSurge + maxUnavailable) and, when some
	// role surges, two last ones that replace the remaining old groups and remove the surplus.
	// Both are 0 when no rollout is under way (creation and scaling go straight to the target).
	Step, Steps int
	State       State
	// Why says what the plan waits for or holds on, for logs, events and views: the roles whose
	// new groups are not ready, the pause, the canary, Recreate's old groups ("" when nothing
	// holds it).
	Why string
	// Restart says the plan restarts roles alone (their spec.roles[].restart) and no rollout is
	// under way: Step and Steps are then the restarting role's own.
	Restart bool
}

// Next is the plan for now, from what exists.
func Next(in Input) Plan {
	rs := resolved(in.Roles)
	rolling, restarting := in.RollingOut, false
	for _, r := range rs {
		rolling = rolling || r.Old > 0
		restarting = restarting || r.Restarting > 0
	}
	if !rolling && restarting {
		return alone(in, rs)
	}
	for i := range rs {
		// During a rollout a role's restart rides along: its groups are old groups of the rollout.
		rs[i].Old, rs[i].Restarting = rs[i].Old+rs[i].Restarting, 0
		rolling = rolling || rs[i].Old > 0
	}
	if !rolling || final(rs) {
		return direct(rs)
	}
	if in.Paused {
		return paused(rs)
	}
	if in.Strategy == v1.Recreate {
		return recreate(rs)
	}
	return stepwise(rs)
}

// alone is the plan of a restart of some roles without a rollout: each restarting role is planned
// as a serving of that one role (its own steps of maxSurge + maxUnavailable groups, its pause and
// canary), and the other roles go straight to their groups. A restart keeps the revision, so the
// roles' shares of it do not change and there is no ratio to keep.
func alone(in Input, rs []Role) Plan {
	p := Plan{Restart: true}
	var whys []string
	for _, r := range rs {
		if r.Restarting == 0 {
			t := Target{Name: r.Name, Replicas: r.Desired, Updated: r.Desired}
			p.Roles = append(p.Roles, t)
			if p.State == "" && (r.Updated != r.Desired || r.ReadyUpdated < r.Desired) {
				p.State = Progressing
			}
			continue
		}
		r.Old, r.Restarting = r.Restarting, 0
		sub := Next(Input{Roles: []Role{r}, Strategy: in.Strategy, Paused: in.Paused})
		p.Roles = append(p.Roles, sub.Roles[0])
		if p.Steps == 0 {
			p.Step, p.Steps = sub.Step, sub.Steps
		}
		if sub.Why != "" {
			whys = append(whys, string(r.Name)+" restart: "+strings.TrimPrefix(sub.Why, string(r.Name)+": "))
		}
		if p.State == "" || stateRank[sub.State] > stateRank[p.State] {
			p.State = sub.State
		}
	}
	p.Why = strings.Join(whys, "; ")
	return p
}

// stateRank orders the states of the roles restarting alone: the plan reports the busiest.
var stateRank = map[State]int{Complete: 0, CanaryHeld: 1, Paused: 2, Waiting: 3, Progressing: 4}

// direct is the plan when no rollout is under way: every role straight to its groups.
func direct(rs []Role) Plan {
	p := Plan{State: Complete}
	for _, r := range rs {
		p.Roles = append(p.Roles, Target{Name: r.Name, Replicas: r.Desired, Updated: r.Desired})
		if r.Updated != r.Desired || r.ReadyUpdated < r.Desired {
			p.State = Progressing
		}
	}
	return p
}

// paused holds every role where it is. A role not started yet keeps scaling its old revision,
// as a paused serving without roles does; a role under way cannot (an old group cannot be added
// below the new ones), so its scaling waits for resume.
func paused(rs []Role) Plan {
	p := Plan{State: Paused, Why: "rollout paused"}
	for _, r := range rs {
		t := Target{Name: r.Name, Replicas: r.Updated + r.Old, Updated: r.Updated}
		if r.Updated == 0 {
			t.Replicas = r.Desired
		}
		p.Roles = append(p.Roles, t)
	}
	return p
}

// recreate stops the old groups of every role, then starts every role's new groups at once.
func recreate(rs []Role) Plan {
	p := Plan{Step: 2, Steps: 2, State: Progressing}
	anyOld := false
	for _, r := range rs {
		anyOld = anyOld || r.Old > 0
	}
	for _, r := range rs {
		t := Target{Name: r.Name, Replicas: r.Desired, Updated: r.Desired}
		if anyOld {
			t = Target{Name: r.Name, Replicas: min(r.Updated, r.Desired), Updated: min(r.Updated, r.Desired)}
		}
		p.Roles = append(p.Roles, t)
	}
	if anyOld {
		p.Step, p.Why = 1, "Recreate: waiting for the old groups of every role to stop"
	}
	return finish(p, rs)
}

// stepwise moves every role one lockstep step at a time: step c+1 once every role has step c's
// new groups ready.
func stepwise(rs []Role) Plan {
	sc := newSchedule(rs)
	p := Plan{Steps: sc.steps}
	c := sc.completed(rs)
	next := min(c+1, sc.steps)
	if h, ok := sc.hold(); ok && c >= h {
		// Every role has its canary groups ready (or more, which stay: a canary never takes
		// a new group back). The plan is held at step h: the canary caps every later step to
		// h's shape, so those look completed too, but none of them is reached.
		next = h
		p.State, p.Why = CanaryHeld, sc.canaryWhy(rs)
	}
	if sc.blocked() {
		next, p.State, p.Why = 0, CanaryHeld, sc.canaryWhy(rs)
	}
	p.Step = next
	for i, r := range rs {
		p.Roles = append(p.Roles, sc.target(i, next, r))
	}
	if p.State == CanaryHeld {
		return p
	}
	return finish(p, rs)
}

// finish sets Progressing or Waiting: whether the targets differ from what exists.
func finish(p Plan, rs []Role) Plan {
	p.State = Waiting
	for i, t := range p.Roles {
		if t.Updated != rs[i].Updated || t.Partition() != rs[i].Old {
			p.State = Progressing
		}
	}
	if p.State == Waiting && p.Why == "" {
		p.Why = readinessWhy(rs, p.Roles)
	}
	return p
}

// InStep reports the ratio rule for what exists: some step k brackets every role, its ready new
// groups (at most Desired of them) between the role's planned count at step k and at step k+1.
// The e2e checks it on every event of a rollout; the planner keeps it while no ready group fails.
func InStep(in Input) bool {
	rs := resolved(in.Roles)
	sc := newSchedule(rs)
	if sc.lockstep == 0 {
		return true
	}
	for k := 0; k < sc.lockstep; k++ {
		ok := true
		for i, r := range rs {
			if r.Desired == 0 {
				continue
			}
			ready := min(r.ReadyUpdated, r.Desired)
			if ready < sc.newAt(i, k) || ready > sc.newAt(i, k+1) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// Steps is the whole plan from what exists: the plan of every step, assuming each one's new groups
// become ready, up to the last one, a held canary or a pause.
func Steps(in Input) []Plan {
	cur := in
	cur.Roles = append([]Role(nil), in.Roles...)
	var out []Plan
	// Each step changes something or ends the loop; the bound only guards a planner bug.
	for range 4*v1.MaxGroups + 8 {
		p := Next(cur)
		if p.State == Waiting {
			// Assume the groups it waits for become ready.
			for i := range cur.Roles {
				cur.Roles[i].ReadyUpdated = cur.Roles[i].Updated
			}
			continue
		}
		out = append(out, p)
		if p.State != Progressing {
			return out
		}
		for i, t := range p.Roles {
			cur.Roles[i].Updated, cur.Roles[i].Old = t.Updated, t.Partition()
			cur.Roles[i].ReadyUpdated = t.Updated
			if p.Restart {
				cur.Roles[i].Restarting, cur.Roles[i].Old = cur.Roles[i].Old, 0
			}
		}
		cur.RollingOut = p.Steps > 0 && !p.Restart
	}
	return out
}

// Resolve turns a maxSurge or maxUnavailable into groups of a role with desired groups, as
// LeaderWorkerSet and Deployment do: a percentage rounds up for a surge, down otherwise. Nil is 0.
func Resolve(v *intstr.IntOrString, desired int32, roundUp bool) (int32, error) {
	if v == nil {
		return 0, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, int(desired), roundUp)
	if err != nil {
		return 0, err
	}
	return int32(max(n, 0)), nil
}

// CanaryCap is the groups of a role a partition lets onto the new revision; nil when the
// partition holds none back (no canary).
func CanaryCap(desired int32, partition *int32) *int32 {
	if partition == nil || *partition <= 0 {
		return nil
	}
	c := max(desired-*partition, 0)
	return &c
}

// CanaryPartition is the partition of a role with desired groups for a canary of the whole
// topology: k groups of every role, or a percentage of each role's groups, rounded up so that a
// canary of more than 0% has a group of every role (a revision cannot serve without every role).
func CanaryPartition(desired int32, groups intstr.IntOrString) (int32, error) {
	k, err := Resolve(&groups, desired, true)
	if err != nil {
		return 0, err
	}
	return max(desired-k, 0), nil
}

// RolesOf is the planner's roles for a spec, with what exists left at zero for the caller.
func RolesOf(spec v1.ModelServingSpec) ([]Role, error) {
	var out []Role
	for _, name := range v1.RoleNames() {
		rs, ok := spec.ForRole(name)
		if !ok {
			continue
		}
		d := int32(0)
		if rs.Replicas != nil {
			d = *rs.Replicas
		}
		surge, err := Resolve(rs.Rollout.MaxSurge, d, true)
		if err != nil {
			return nil, fmt.Errorf("spec.roles[%s].rollout.maxSurge: %w", name, err)
		}
		unavailable, err := Resolve(rs.Rollout.MaxUnavailable, d, false)
		if err != nil {
			return nil, fmt.Errorf("spec.roles[%s].rollout.maxUnavailable: %w", name, err)
		}
		out = append(out, Role{Name: name, Desired: d, MaxSurge: surge, MaxUnavailable: unavailable,
			Canary: CanaryCap(d, rs.Rollout.Partition)})
	}
	return out, nil
}

// resolved copies the roles with their limits made usable: never negative, a surge of at most
// the role's groups (more could never be used), and a batch of at least one group.
func resolved(in []Role) []Role {
	out := make([]Role, len(in))
	for i, r := range in {
		r.Desired, r.Updated, r.Old = max(r.Desired, 0), max(r.Updated, 0), max(r.Old, 0)
		r.ReadyUpdated = min(max(r.ReadyUpdated, 0), r.Updated)
		r.MaxSurge = min(max(r.MaxSurge, 0), r.Desired)
		r.MaxUnavailable = max(r.MaxUnavailable, 0)
		if r.MaxSurge == 0 && r.MaxUnavailable == 0 {
			r.MaxUnavailable = 1
		}
		out[i] = r
	}
	return out
}

// final reports whether every role has its groups, all new and ready, and nothing more.
func final(rs []Role) bool {
	for _, r := range rs {
		if r.Updated != r.Desired || r.Old != 0 || r.ReadyUpdated < r.Desired {
			return false
		}
	}
	return true
}

func readinessWhy(rs []Role, ts []Target) string {
	var parts []string
	for i, r := range rs {
		if r.ReadyUpdated < ts[i].Updated {
			parts = append(parts, fmt.Sprintf("%s: %d of %d new groups ready", r.Name, r.ReadyUpdated, ts[i].Updated))
		}
	}
	return strings.Join(parts, "; ")
}
