package roleplan

import (
	"fmt"
	"strings"
)

// schedule is the planned shape of every role at every step, from the roles' desired groups and
// limits alone. With S lockstep steps, role r has ceil(k·desired/S) new groups at step k (capped
// by its canary), so its count moves by at most one batch (maxSurge + maxUnavailable) a step and
// every role reaches its end at step S. Its first min(maxSurge, new) new groups are surge groups
// added on top; the others replace old groups in place. When some role surges, step S+1 replaces
// its remaining old groups and step S+2 removes the surplus new ones.
type schedule struct {
	lockstep int // S
	steps    int // S, or S+2 when some role surges
	roles    []Role
}

func newSchedule(rs []Role) schedule {
	sc := schedule{roles: rs}
	surges := false
	for _, r := range rs {
		if r.Desired == 0 {
			continue
		}
		batch := r.MaxSurge + r.MaxUnavailable
		sc.lockstep = max(sc.lockstep, int((r.Desired+batch-1)/batch))
		surges = surges || r.MaxSurge > 0
	}
	sc.steps = sc.lockstep
	if surges {
		sc.steps += 2
	}
	return sc
}

// cap is the most new groups role i may have: its canary, or all its groups.
func (sc schedule) cap(i int) int32 {
	r := sc.roles[i]
	if r.Canary != nil && *r.Canary < r.Desired {
		return max(*r.Canary, 0)
	}
	return r.Desired
}

// newAt is role i's new groups at lockstep step k (0..S), capped by its canary.
func (sc schedule) newAt(i, k int) int32 {
	d := int64(sc.roles[i].Desired)
	if sc.lockstep == 0 {
		return 0
	}
	n := (int64(k)*d + int64(sc.lockstep) - 1) / int64(sc.lockstep)
	return min(int32(n), sc.cap(i))
}

// shape is role i's new and old groups at step k (0..steps).
func (sc schedule) shape(i, k int) (updated, old int32) {
	r := sc.roles[i]
	switch {
	case k <= sc.lockstep:
		u := sc.newAt(i, k)
		return u, r.Desired + min(r.MaxSurge, u) - u
	case k == sc.lockstep+1:
		return r.Desired + r.MaxSurge, 0
	default:
		return r.Desired, 0
	}
}

// completed is the last step whose new groups are ready in every role.
func (sc schedule) completed(rs []Role) int {
	last := min(sc.steps, sc.lockstep+1)
	for k := last; k > 0; k-- {
		done := true
		for i, r := range rs {
			u, _ := sc.shape(i, k)
			if r.ReadyUpdated < u || (k > sc.lockstep && r.Old > 0) {
				done = false
				break
			}
		}
		if done {
			return k
		}
	}
	return 0
}

// target is role i's target for step k from what exists: it never takes a new group back (but
// for the surplus at the last step), never adds an old group, and never exceeds the surge.
func (sc schedule) target(i, k int, r Role) Target {
	u, old := sc.shape(i, k)
	limit := r.Desired + r.MaxSurge
	if k <= sc.lockstep+1 {
		u = max(u, min(r.Updated, limit))
	}
	old = max(min(old, r.Old, limit-u), 0)
	return Target{Name: r.Name, Replicas: u + old, Updated: u}
}

// hold is the step a canary holds at: the first where every role has its canary groups.
func (sc schedule) hold() (int, bool) {
	active := false
	for i, r := range sc.roles {
		active = active || sc.cap(i) < r.Desired
	}
	if !active {
		return 0, false
	}
	for k := 0; k < sc.lockstep; k++ {
		at := true
		for i := range sc.roles {
			at = at && sc.newAt(i, k) == sc.cap(i)
		}
		if at {
			return k, true
		}
	}
	return sc.lockstep, true
}

// blocked reports a canary that holds back every group of some role while others have groups:
// a revision cannot serve without every role, so no role moves.
func (sc schedule) blocked() bool {
	if _, ok := sc.hold(); !ok {
		return false
	}
	for i, r := range sc.roles {
		if r.Desired > 0 && sc.cap(i) == 0 {
			return true
		}
	}
	return false
}

func (sc schedule) canaryWhy(rs []Role) string {
	var parts []string
	for i, r := range rs {
		if sc.cap(i) == 0 && r.Desired > 0 {
			return fmt.Sprintf("canary holds no group of %s: a revision cannot serve without every role; give every role a canary group", r.Name)
		}
		parts = append(parts, fmt.Sprintf("%s %d of %d", r.Name, sc.cap(i), r.Desired))
	}
	return "canary: " + strings.Join(parts, ", ") + " groups on the new revision; promote to go on"
}
