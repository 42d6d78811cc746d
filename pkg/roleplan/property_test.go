package roleplan_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kubectl-llm/kubectl-llm/pkg/roleplan"
)

// rollout is a random two-role rollout and the role (or -1) whose new groups never become ready.
type rollout struct {
	in      roleplan.Input
	blocked int
}

func randomRollout(rng *rand.Rand) rollout {
	in := pd(1+rng.Int32N(10), 1+rng.Int32N(16), 0, 0)
	for i := range in.Roles {
		in.Roles[i].MaxSurge, in.Roles[i].MaxUnavailable = rng.Int32N(4), rng.Int32N(4)
	}
	if rng.IntN(3) == 0 { // a canary of at least one group in every role
		for i := range in.Roles {
			in.Roles[i].Canary = new(1 + rng.Int32N(in.Roles[i].Desired))
		}
	}
	r := rollout{in: in, blocked: -1}
	if rng.IntN(4) == 0 {
		r.blocked = rng.IntN(len(in.Roles))
	}
	return r
}

// check runs a rollout through a random sequence of reconciles and groups becoming ready, and
// checks on every event what the planner promises. It returns the last plan.
func check(t *testing.T, rng *rand.Rand, r rollout) roleplan.Plan {
	t.Helper()
	cur := r.in
	cur.Roles = append([]roleplan.Role(nil), r.in.Roles...)
	describe := func() string { return fmt.Sprintf("%+v (blocked role %d)", r.in.Roles, r.blocked) }
	var last roleplan.Plan
	reconcile := func() {
		last = roleplan.Next(cur)
		for i, tg := range last.Roles {
			ro := cur.Roles[i]
			if tg.Updated < 0 || tg.Partition() < 0 {
				t.Fatalf("%s: negative target %+v", describe(), tg)
			}
			if tg.Updated > 0 && tg.Partition() > ro.Old {
				t.Fatalf("%s: target %+v adds old groups to %+v", describe(), tg, ro)
			}
			if tg.Replicas > ro.Desired+min(ro.MaxSurge, ro.Desired) {
				t.Fatalf("%s: target %+v beyond the surge of %+v", describe(), tg, ro)
			}
			cur.Roles[i].Updated, cur.Roles[i].Old = tg.Updated, tg.Partition()
			cur.Roles[i].ReadyUpdated = min(ro.ReadyUpdated, tg.Updated)
		}
	}
	ready := func() {
		i := rng.IntN(len(cur.Roles))
		if i != r.blocked && cur.Roles[i].ReadyUpdated < cur.Roles[i].Updated {
			cur.Roles[i].ReadyUpdated++
		}
	}
	invariants := func() {
		if !roleplan.InStep(cur) {
			t.Fatalf("%s: roles out of step at %+v", describe(), cur.Roles)
		}
		for _, ro := range cur.Roles {
			unavailable := max(ro.MaxUnavailable, 0)
			if min(ro.MaxSurge, ro.Desired) == 0 && unavailable == 0 {
				unavailable = 1
			}
			if serving := ro.Old + ro.ReadyUpdated; serving < ro.Desired-unavailable {
				t.Fatalf("%s: %s has %d groups serving of %d, maxUnavailable %d", describe(), ro.Name, serving, ro.Desired, unavailable)
			}
		}
	}
	for range 20 * (cur.Roles[0].Desired + cur.Roles[1].Desired) {
		if rng.IntN(2) == 0 {
			reconcile()
		} else {
			ready()
		}
		invariants()
	}
	// Then to the end: every group that can become ready does. A step takes two passes at most
	// (one to apply it, one to see it ready), and there are at most desired+2 steps.
	for range 4 * (cur.Roles[0].Desired + cur.Roles[1].Desired + 2) {
		reconcile()
		invariants()
		if last.State != roleplan.Progressing && last.State != roleplan.Waiting {
			break
		}
		for i := range cur.Roles {
			if i != r.blocked {
				cur.Roles[i].ReadyUpdated = cur.Roles[i].Updated
			}
		}
		invariants()
	}
	return last
}

func TestRandomRolloutsKeepTheRolesInStep(t *testing.T) {
	for seed := range uint64(2000) {
		rng := rand.New(rand.NewPCG(seed, 17))
		r := randomRollout(rng)
		last := check(t, rng, r)
		want := roleplan.Complete
		for _, ro := range r.in.Roles {
			if ro.Canary != nil && *ro.Canary < ro.Desired {
				want = roleplan.CanaryHeld
			}
		}
		if r.blocked >= 0 {
			want = roleplan.Waiting
		}
		if last.State != want && !(r.blocked >= 0 && last.State == roleplan.CanaryHeld) {
			t.Fatalf("seed %d: %+v (blocked %d) ended %s (%q), want %s", seed, r.in.Roles, r.blocked, last.State, last.Why, want)
		}
	}
}

// FuzzRolloutKeepsTheRolesInStep explores the same promise from fuzzed sizes, limits and
// readiness sequences: go test -fuzz FuzzRolloutKeepsTheRolesInStep ./pkg/roleplan/
func FuzzRolloutKeepsTheRolesInStep(f *testing.F) {
	f.Add(uint8(2), uint8(6), uint8(0), uint8(1), uint8(0), uint8(1), uint8(0), uint64(1))
	f.Add(uint8(2), uint8(6), uint8(1), uint8(0), uint8(1), uint8(0), uint8(1), uint64(2))
	f.Add(uint8(9), uint8(1), uint8(3), uint8(2), uint8(0), uint8(0), uint8(2), uint64(3))
	f.Fuzz(func(t *testing.T, prefill, decode, ps, pu, ds, du, blocked uint8, seed uint64) {
		in := pd(1+int32(prefill%24), 1+int32(decode%24), 0, 0)
		in.Roles[0].MaxSurge, in.Roles[0].MaxUnavailable = int32(ps%5), int32(pu%5)
		in.Roles[1].MaxSurge, in.Roles[1].MaxUnavailable = int32(ds%5), int32(du%5)
		check(t, rand.New(rand.NewPCG(seed, 17)), rollout{in: in, blocked: int(blocked%3) - 1})
	})
}
