package tui

import (
	"fmt"
	"slices"
	"strings"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/roleplan"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// RolePlanInput is the lockstep planner's input for a serving with roles as a view sees it: each
// role's limits from the spec and, from the role's groups in sum (status.Summarize of what the
// view read), its groups on revision rev (with the spec's restart id), how many of those are
// ready, and its groups on any other revision. The status keeps only the planner's sentence (in
// the Progressing condition), so a view that shows the step runs the same planner on what it sees.
func RolePlanInput(ms *v1.ModelServing, sum status.Summary, rev string) (roleplan.Input, error) {
	roles, err := roleplan.RolesOf(ms.Spec)
	if err != nil {
		return roleplan.Input{}, err
	}
	for i := range roles {
		r := &roles[i]
		for _, rs := range sum.Roles {
			if rs.Role == r.Name {
				c := countRole(ms, rs, rev)
				r.Updated, r.ReadyUpdated, r.Old = int32(c.New), int32(c.NewReady), int32(c.Old)
				for _, g := range rs.Groups {
					if g.Exists() && !g.Updated(rev, RoleRestartID(ms.Spec, r.Name)) && g.WaitsForRoleRestart(rev, RoleRestartID(ms.Spec, "")) {
						r.Old, r.Restarting = r.Old-1, r.Restarting+1 // the role's own restart, planned alone
					}
				}
			}
		}
	}
	cur := ms.Status.CurrentRevision
	return roleplan.Input{Roles: roles, Strategy: ms.Spec.Rollout.Strategy, Paused: ms.Spec.Rollout.Paused,
		RollingOut: cur != "" && cur != rev}, nil
}

// RoleRestartID is the restart id the pods of a role should carry: the serving's spec.restart.id
// and the role's spec.roles[].restart.id (v1.RoleRestartID); the serving's alone for the role "".
func RoleRestartID(spec v1.ModelServingSpec, role v1.RoleName) string {
	serving, own := "", ""
	if spec.Restart != nil {
		serving = spec.Restart.ID
	}
	if r := spec.Role(role); r != nil && r.Restart != nil {
		own = r.Restart.ID
	}
	return v1.RoleRestartID(serving, own)
}

// RolePlan is the planner's current step for a serving with roles, from what a view sees; false
// when the serving has no roles or its limits do not resolve.
func RolePlan(ms *v1.ModelServing, sum status.Summary) (roleplan.Plan, bool) {
	if len(ms.Spec.Roles) == 0 || len(sum.Roles) == 0 {
		return roleplan.Plan{}, false
	}
	in, err := RolePlanInput(ms, sum, ms.Status.UpdateRevision)
	if err != nil {
		return roleplan.Plan{}, false
	}
	return roleplan.Next(in), true
}

// StepLine says where a plan is, in one line: "step 2/6: waiting for decode: 1 of 2 new groups
// ready", "step 3/6: moving prefill to 1 new group(s), decode to 3", "no rollout under way".
func StepLine(p roleplan.Plan) string {
	if p.Steps == 0 {
		if p.State == roleplan.Complete {
			return "no rollout under way"
		}
		return "scaling every role to its groups (no rollout under way)"
	}
	at := fmt.Sprintf("step %d/%d: ", p.Step, p.Steps)
	switch p.State {
	case roleplan.Waiting:
		return at + "waiting for " + p.Why
	case roleplan.Progressing:
		parts := make([]string, 0, len(p.Roles))
		for _, t := range p.Roles {
			parts = append(parts, fmt.Sprintf("%s %d of %d", t.Name, t.Updated, t.Replicas))
		}
		return at + "moving to " + strings.Join(parts, ", ") + " group(s) on the new revision"
	case roleplan.Complete:
		return at + "complete"
	default: // Paused, CanaryHeld
		return at + p.Why
	}
}

// RoleCounts is a role's groups on the update revision and on older ones, as a view counts them:
// new and old, with how many of each are ready.
type RoleCounts struct {
	Name                               v1.RoleName
	Desired                            int32
	New, NewReady, Old, OldReady, Size int
}

// RoleCountsOf counts each role's groups of sum by revision: new (on the update revision with the
// current restart id) and old, with their ready ones.
func RoleCountsOf(ms *v1.ModelServing, sum status.Summary) []RoleCounts {
	out := make([]RoleCounts, 0, len(sum.Roles))
	for _, rs := range sum.Roles {
		out = append(out, countRole(ms, rs, ms.Status.UpdateRevision))
	}
	return out
}

func countRole(ms *v1.ModelServing, rs status.Summary, rev string) RoleCounts {
	c := CountGroups(rs.Groups, rev, RoleRestartID(ms.Spec, rs.Role))
	c.Name, c.Desired = rs.Role, rs.Desired
	return c
}

// CountGroups counts the groups that exist on revision rev with restart id restartID (new) and on
// anything else (old), with the ready ones of each.
func CountGroups(groups []status.Group, rev, restartID string) RoleCounts {
	var c RoleCounts
	for _, g := range groups {
		c.Size = max(c.Size, g.Size)
		switch {
		case !g.Exists():
		case g.Updated(rev, restartID):
			c.New++
			if g.Ready() {
				c.NewReady++
			}
		default:
			c.Old++
			if g.Ready() {
				c.OldReady++
			}
		}
	}
	return c
}

// RoleSkew says, for each revision on which some role has ready groups while another role has
// none, what is ready and what is missing: a router that keeps a request within one revision
// (llm-d's disaggregatedset-rollout-screener, by the revision and role labels) could pick that
// revision and find only one role. Revisions are in name order.
func RoleSkew(sum status.Summary) []string {
	ready := map[string]map[v1.RoleName]int{}
	for _, rs := range sum.Roles {
		for _, g := range rs.Groups {
			if g.Revision == "" || !g.Ready() {
				continue
			}
			if ready[g.Revision] == nil {
				ready[g.Revision] = map[v1.RoleName]int{}
			}
			ready[g.Revision][rs.Role]++
		}
	}
	revs := make([]string, 0, len(ready))
	for rev := range ready {
		revs = append(revs, rev)
	}
	slices.Sort(revs)
	var out []string
	for _, rev := range revs {
		var have, lack []string
		for _, rs := range sum.Roles {
			switch n := ready[rev][rs.Role]; {
			case n > 0:
				have = append(have, fmt.Sprintf("%d ready %s group(s)", n, rs.Role))
			case rs.Desired > 0:
				lack = append(lack, string(rs.Role))
			}
		}
		if len(have) > 0 && len(lack) > 0 {
			out = append(out, fmt.Sprintf("revision %s has %s but no ready %s group: a router that keeps a request within one revision could pick it and find only one role",
				rev, strings.Join(have, " and "), strings.Join(lack, " or ")))
		}
	}
	return out
}
