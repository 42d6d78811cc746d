package tui

import (
	"fmt"
	"slices"
	"strings"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

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

// ServingStepLine is StepLine of the serving's plan while that plan is of the serving's spec; when
// the spec changed since (a new image set, the operator not through it yet) or the plan is of
// another revision than the status's update revision, it says the plan is waited for rather than
// show the old one ("step 6/6: complete" just after a set image).
func ServingStepLine(ms *v1.ModelServing) string {
	p := ms.Status.Plan
	if p == nil {
		return ""
	}
	if !status.OfSpec(ms) || (p.Revision != "" && p.Revision != ms.Status.UpdateRevision) {
		return fmt.Sprintf("waiting for the operator to plan generation %d", ms.Generation)
	}
	return StepLine(p)
}

// StepLine says where the operator's plan (status.plan) is, in one line: "step 2/6: waiting for
// decode: 1 of 2 new groups ready", "step 3/6: moving to prefill 1 of 2, decode 3 of 6 group(s) on
// the new revision", "no rollout under way"; "" when the status has no plan (an operator that
// does not report one, or a serving without roles).
func StepLine(p *v1.PlanStatus) string {
	if p == nil {
		return ""
	}
	if p.Steps == 0 {
		if p.State == v1.PlanComplete {
			return "no rollout under way"
		}
		return "scaling every role to its groups (no rollout under way)"
	}
	at := fmt.Sprintf("step %d/%d: ", p.Step, p.Steps)
	switch p.State {
	case v1.PlanWaiting:
		return at + "waiting for " + p.Message
	case v1.PlanProgressing:
		parts := make([]string, 0, len(p.Roles))
		for _, t := range p.Roles {
			parts = append(parts, fmt.Sprintf("%s %d of %d", t.Name, t.UpdatedReplicas, t.Replicas))
		}
		return at + "moving to " + strings.Join(parts, ", ") + " group(s) on the new revision"
	case v1.PlanComplete:
		return at + "complete"
	default: // Paused, CanaryHeld
		return at + p.Message
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

// RolledOut reports a role whose rollout completed while the serving's goes on: every group of
// the role on the update revision and ready, none on another, and the serving's current revision
// not yet the update revision (a role at rest is not news; the serving's own line says when the
// whole rollout completes).
func (c RoleCounts) RolledOut(ms *v1.ModelServing) bool {
	st := ms.Status
	return c.Desired > 0 && c.New == int(c.Desired) && c.NewReady == int(c.Desired) && c.Old == 0 &&
		st.UpdateRevision != "" && st.CurrentRevision != st.UpdateRevision
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
