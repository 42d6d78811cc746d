package roleplan_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/roleplan"
)

// pd is a rollout about to start: prefill and decode groups all on the old revision and ready.
func pd(prefill, decode, surge, unavailable int32) roleplan.Input {
	return roleplan.Input{Strategy: v1.RollingUpdate, RollingOut: true, Roles: []roleplan.Role{
		{Name: v1.RolePrefill, Desired: prefill, Old: prefill, MaxSurge: surge, MaxUnavailable: unavailable},
		{Name: v1.RoleDecode, Desired: decode, Old: decode, MaxSurge: surge, MaxUnavailable: unavailable},
	}}
}

// shape is one plan written short: prefill replicas/updated, decode replicas/updated.
type shape struct{ PR, PU, DR, DU int32 }

func one(p roleplan.Plan) shape {
	return shape{p.Roles[0].Replicas, p.Roles[0].Updated, p.Roles[1].Replicas, p.Roles[1].Updated}
}

func shapes(ps []roleplan.Plan) []shape {
	var out []shape
	for _, p := range ps {
		out = append(out, one(p))
	}
	return out
}

func TestStepsKeepTheRatioOfTwoPrefillToSixDecodeWithoutSurge(t *testing.T) {
	got := roleplan.Steps(pd(2, 6, 0, 1))
	// Six steps (decode needs six batches of one); prefill moves at steps 1 and 4, where its
	// share crosses decode's, replaced in place as there is no spare group.
	want := []shape{{2, 1, 6, 1}, {2, 1, 6, 2}, {2, 1, 6, 3}, {2, 2, 6, 4}, {2, 2, 6, 5}, {2, 2, 6, 6}, {2, 2, 6, 6}}
	if diff := cmp.Diff(want, shapes(got)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	for i, p := range got[:len(got)-1] {
		if p.State != roleplan.Progressing || p.Step != i+1 || p.Steps != 6 {
			t.Errorf("plan %d: state %s, step %d of %d; want Progressing, step %d of 6", i, p.State, p.Step, p.Steps, i+1)
		}
	}
	if last := got[len(got)-1]; last.State != roleplan.Complete {
		t.Errorf("last plan %s, want Complete", last.State)
	}
}

func TestNewGroupsComeUpBeforeOldOnesGoWhereSurgeAllows(t *testing.T) {
	got := roleplan.Steps(pd(2, 6, 1, 0))
	want := []shape{
		{3, 1, 7, 1}, // a surge group of each role, no old group touched
		{3, 1, 7, 2}, // from here on, an old group is replaced only while the surge group serves
		{3, 1, 7, 3},
		{3, 2, 7, 4},
		{3, 2, 7, 5},
		{3, 2, 7, 6},
		{3, 3, 7, 7}, // the last old groups replaced
		{2, 2, 6, 6}, // the surplus removed
		{2, 2, 6, 6}, // complete
	}
	if diff := cmp.Diff(want, shapes(got)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	for _, s := range want {
		old := (s.PR - s.PU) + (s.DR - s.DU)
		newReady := min(s.PU, 2) + min(s.DU, 6)
		if old+newReady < 8 && s != want[0] {
			t.Errorf("%+v leaves %d groups serving of 8: maxUnavailable is 0", s, old+newReady)
		}
	}
}

func TestWhenOneRoleCannotProgressTheOthersWait(t *testing.T) {
	in := pd(2, 6, 0, 1)
	// Step 1 applied: one group of each role replaced; decode's is ready, prefill's finds no GPU.
	in.Roles[0].Updated, in.Roles[0].Old = 1, 1
	in.Roles[1].Updated, in.Roles[1].Old, in.Roles[1].ReadyUpdated = 1, 5, 1
	got := roleplan.Next(in)
	if got.State != roleplan.Waiting || got.Step != 1 {
		t.Fatalf("state %s at step %d, want Waiting at step 1", got.State, got.Step)
	}
	if diff := cmp.Diff(shape{2, 1, 6, 1}, one(got)); diff != "" {
		t.Errorf("decode ran ahead (-want +got):\n%s", diff)
	}
	if got.Why != "prefill: 0 of 1 new groups ready" {
		t.Errorf("why = %q", got.Why)
	}
	// Once prefill's group is ready, both move on.
	in.Roles[0].ReadyUpdated = 1
	if got := roleplan.Next(in); got.State != roleplan.Progressing || got.Step != 2 || got.Roles[1].Updated != 2 {
		t.Errorf("after prefill is ready: %s step %d, decode updated %d; want Progressing step 2, 2", got.State, got.Step, got.Roles[1].Updated)
	}
}

func TestPauseHoldsEveryRole(t *testing.T) {
	in := pd(2, 6, 0, 1)
	in.Paused = true
	in.Roles[0].Updated, in.Roles[0].Old, in.Roles[0].ReadyUpdated = 1, 1, 1
	in.Roles[1].Updated, in.Roles[1].Old, in.Roles[1].ReadyUpdated = 2, 4, 2
	got := roleplan.Next(in)
	if got.State != roleplan.Paused || got.Why != "rollout paused" {
		t.Errorf("state %s (%q), want Paused", got.State, got.Why)
	}
	if diff := cmp.Diff(shape{2, 1, 6, 2}, one(got)); diff != "" {
		t.Errorf("paused plan moved (-want +got):\n%s", diff)
	}
	// Before any group moved, a paused rollout still scales the old revision.
	in = pd(2, 6, 0, 1)
	in.Paused = true
	in.Roles[1].Desired = 8
	if diff := cmp.Diff(shape{2, 0, 8, 0}, one(roleplan.Next(in))); diff != "" {
		t.Errorf("paused scale (-want +got):\n%s", diff)
	}
}

func TestACanaryOfOneGroupPerRoleHoldsUntilPromoted(t *testing.T) {
	in := pd(2, 6, 0, 1)
	for i := range in.Roles {
		in.Roles[i].Canary = roleplan.CanaryCap(in.Roles[i].Desired, ptr.To(in.Roles[i].Desired-1))
	}
	got := roleplan.Steps(in)
	if diff := cmp.Diff([]shape{{2, 1, 6, 1}, {2, 1, 6, 1}}, shapes(got)); diff != "" {
		t.Errorf("canary steps (-want +got):\n%s", diff)
	}
	held := got[len(got)-1]
	if held.State != roleplan.CanaryHeld || !strings.Contains(held.Why, "prefill 1 of 2, decode 1 of 6") {
		t.Errorf("last plan %s (%q), want CanaryHeld naming each role's canary", held.State, held.Why)
	}
	// Promoting (no partition) continues from the canary.
	in.Roles[0].Canary, in.Roles[1].Canary = nil, nil
	in.Roles[0].Updated, in.Roles[0].Old, in.Roles[0].ReadyUpdated = 1, 1, 1
	in.Roles[1].Updated, in.Roles[1].Old, in.Roles[1].ReadyUpdated = 1, 5, 1
	if p := roleplan.Next(in); p.State != roleplan.Progressing || p.Step != 2 || p.Roles[1].Updated != 2 {
		t.Errorf("after promote: %s step %d, decode updated %d; want step 2 with 2", p.State, p.Step, p.Roles[1].Updated)
	}
}

func TestACanaryOfAQuarterOfEveryRoleRoundsUpToAGroupOfEach(t *testing.T) {
	in := pd(2, 6, 0, 1)
	for i := range in.Roles {
		p, err := roleplan.CanaryPartition(in.Roles[i].Desired, intstr.FromString("25%"))
		if err != nil {
			t.Fatal(err)
		}
		in.Roles[i].Canary = roleplan.CanaryCap(in.Roles[i].Desired, &p)
	}
	got := roleplan.Steps(in)
	if diff := cmp.Diff([]shape{{2, 1, 6, 1}, {2, 1, 6, 2}, {2, 1, 6, 2}}, shapes(got)); diff != "" {
		t.Errorf("25%% canary steps (-want +got):\n%s", diff)
	}
	if got[len(got)-1].State != roleplan.CanaryHeld {
		t.Errorf("last plan %s, want CanaryHeld", got[len(got)-1].State)
	}
}

func TestACanaryWithoutAGroupOfSomeRoleMovesNoRole(t *testing.T) {
	in := pd(2, 6, 0, 1)
	in.Roles[0].Canary = ptr.To[int32](1)
	in.Roles[1].Canary = ptr.To[int32](0)
	got := roleplan.Next(in)
	if got.State != roleplan.CanaryHeld || !strings.Contains(got.Why, "canary holds no group of decode") {
		t.Errorf("state %s (%q), want CanaryHeld saying decode has no canary group", got.State, got.Why)
	}
	if diff := cmp.Diff(shape{2, 0, 6, 0}, one(got)); diff != "" {
		t.Errorf("a role moved (-want +got):\n%s", diff)
	}
}

func TestRecreateStopsEveryOldGroupFirst(t *testing.T) {
	in := pd(2, 6, 0, 1)
	in.Strategy = v1.Recreate
	got := roleplan.Steps(in)
	if diff := cmp.Diff([]shape{{0, 0, 0, 0}, {2, 2, 6, 6}, {2, 2, 6, 6}}, shapes(got)); diff != "" {
		t.Errorf("recreate steps (-want +got):\n%s", diff)
	}
	if got[0].Why != "Recreate: waiting for the old groups of every role to stop" {
		t.Errorf("why = %q", got[0].Why)
	}
}

func TestWithoutARolloutGroupsGoStraightToTheirCount(t *testing.T) {
	in := roleplan.Input{Roles: []roleplan.Role{
		{Name: v1.RolePrefill, Desired: 2},
		{Name: v1.RoleDecode, Desired: 6, Updated: 4, ReadyUpdated: 4},
	}}
	got := roleplan.Next(in)
	if got.State != roleplan.Progressing || got.Steps != 0 {
		t.Errorf("state %s, %d steps; want Progressing without steps", got.State, got.Steps)
	}
	if diff := cmp.Diff(shape{2, 2, 6, 6}, one(got)); diff != "" {
		t.Errorf("creation (-want +got):\n%s", diff)
	}
	in.Roles[0].Updated, in.Roles[0].ReadyUpdated = 2, 2
	in.Roles[1].Updated, in.Roles[1].ReadyUpdated = 6, 6
	in.RollingOut = true // the caller has not seen the end yet: the counts say it
	if got := roleplan.Next(in); got.State != roleplan.Complete {
		t.Errorf("state %s, want Complete", got.State)
	}
}

// The last step of a surge rollout waits for the groups replaced at the step before it, which
// counts alone cannot tell from a scale-down; RollingOut tells.
func TestTheSurplusGoesOnlyOnceTheReplacedGroupsAreReady(t *testing.T) {
	in := pd(2, 6, 1, 0)
	in.Roles[0].Updated, in.Roles[0].Old, in.Roles[0].ReadyUpdated = 3, 0, 2
	in.Roles[1].Updated, in.Roles[1].Old, in.Roles[1].ReadyUpdated = 7, 0, 6
	if p := roleplan.Next(in); p.State != roleplan.Waiting || p.Roles[0].Replicas != 3 || p.Roles[1].Replicas != 7 {
		t.Errorf("%s with replicas %d, %d; want Waiting with the surplus kept (3, 7)", p.State, p.Roles[0].Replicas, p.Roles[1].Replicas)
	}
	in.Roles[0].ReadyUpdated, in.Roles[1].ReadyUpdated = 3, 7
	if diff := cmp.Diff(shape{2, 2, 6, 6}, one(roleplan.Next(in))); diff != "" {
		t.Errorf("surplus (-want +got):\n%s", diff)
	}
	// Not rolling out: the same counts are a scale-down, which does not wait.
	in.RollingOut = false
	in.Roles[0].ReadyUpdated = 2
	if diff := cmp.Diff(shape{2, 2, 6, 6}, one(roleplan.Next(in))); diff != "" {
		t.Errorf("scale-down (-want +got):\n%s", diff)
	}
}

func TestInStep(t *testing.T) {
	in := pd(2, 6, 0, 1)
	set := func(p, d int32) roleplan.Input {
		in.Roles[0].ReadyUpdated, in.Roles[0].Updated = p, p
		in.Roles[1].ReadyUpdated, in.Roles[1].Updated = d, d
		return in
	}
	for _, tc := range []struct {
		prefill, decode int32
		want            bool
	}{
		{0, 0, true}, {1, 0, true}, {0, 1, true}, {1, 3, true}, {2, 4, true}, {2, 6, true},
		{2, 0, false}, // prefill done, decode not started
		{0, 2, false}, // decode two steps ahead
		{1, 5, false}, // prefill a step behind decode's step 4
	} {
		if got := roleplan.InStep(set(tc.prefill, tc.decode)); got != tc.want {
			t.Errorf("prefill %d/2, decode %d/6 ready: InStep = %v, want %v", tc.prefill, tc.decode, got, tc.want)
		}
	}
}

func TestResolveRoundsSurgeUpAndUnavailableDown(t *testing.T) {
	for _, tc := range []struct {
		v       intstr.IntOrString
		desired int32
		up      bool
		want    int32
	}{
		{intstr.FromString("25%"), 6, true, 2},
		{intstr.FromString("25%"), 6, false, 1},
		{intstr.FromString("10%"), 2, false, 0},
		{intstr.FromInt32(3), 6, false, 3},
	} {
		if got, err := roleplan.Resolve(&tc.v, tc.desired, tc.up); err != nil || got != tc.want {
			t.Errorf("Resolve(%s of %d, up %v) = %d, %v; want %d", tc.v.String(), tc.desired, tc.up, got, err, tc.want)
		}
	}
	if got, _ := roleplan.Resolve(nil, 6, true); got != 0 {
		t.Errorf("Resolve(nil) = %d", got)
	}
}

func TestRolesOfResolvesEachRoleAgainstItsOwnGroups(t *testing.T) {
	spec := v1.ModelServingSpec{
		Rollout: v1.RolloutSpec{MaxSurge: ptr.To(intstr.FromString("50%")), MaxUnavailable: ptr.To(intstr.FromInt32(1))},
		Roles: []v1.RoleSpec{
			{Name: v1.RoleDecode, Replicas: ptr.To[int32](6), Rollout: &v1.RoleRolloutSpec{Partition: ptr.To[int32](5)}},
			{Name: v1.RolePrefill, Replicas: ptr.To[int32](2), Rollout: &v1.RoleRolloutSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
		},
	}
	got, err := roleplan.RolesOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := []roleplan.Role{
		{Name: v1.RolePrefill, Desired: 2, MaxSurge: 1, MaxUnavailable: 0},
		{Name: v1.RoleDecode, Desired: 6, MaxSurge: 3, MaxUnavailable: 1, Canary: ptr.To[int32](1)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("roles (-want +got):\n%s", diff)
	}
}

// restartDecode is decode's own restart (spec.roles[].restart) with no rollout under way: every
// group on the revision and ready, decode's waiting for its new restart id.
func restartDecode(surge, unavailable int32) roleplan.Input {
	in := pd(2, 6, surge, unavailable)
	in.RollingOut = false
	in.Roles[0].Old, in.Roles[0].Updated, in.Roles[0].ReadyUpdated = 0, 2, 2
	in.Roles[1].Old, in.Roles[1].Restarting = 0, 6
	return in
}

func TestARoleRestartedAloneMovesThatRoleByItsOwnLimitsAndNotTheOther(t *testing.T) {
	got := roleplan.Steps(restartDecode(0, 1))
	// Decode's six groups one at a time, as a serving of decode alone; prefill stays 2/2 all along.
	want := []shape{{2, 2, 6, 1}, {2, 2, 6, 2}, {2, 2, 6, 3}, {2, 2, 6, 4}, {2, 2, 6, 5}, {2, 2, 6, 6}, {2, 2, 6, 6}}
	if diff := cmp.Diff(want, shapes(got)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	for i, p := range got[:len(got)-1] {
		if !p.Restart || p.State != roleplan.Progressing || p.Step != i+1 || p.Steps != 6 {
			t.Errorf("plan %d: restart %v, state %s, step %d of %d; want a Progressing restart, step %d of 6", i, p.Restart, p.State, p.Step, p.Steps, i+1)
		}
	}
	if last := got[len(got)-1]; last.State != roleplan.Complete || last.Restart {
		t.Errorf("last plan %s (restart %v), want Complete", last.State, last.Restart)
	}
}

func TestARoleRestartWaitsForItsOwnGroupsAndSaysSo(t *testing.T) {
	in := restartDecode(1, 0)
	in.Roles[1].Updated = 1 // its surge group exists, not ready yet
	p := roleplan.Next(in)
	if one(p) != (shape{2, 2, 7, 1}) || p.State != roleplan.Waiting || p.Why != "decode restart: 0 of 1 new groups ready" {
		t.Errorf("plan %+v %s %q; want decode's surge group awaited, prefill untouched", one(p), p.State, p.Why)
	}
	in.Paused = true
	if p := roleplan.Next(in); p.State != roleplan.Paused || one(p) != (shape{2, 2, 7, 1}) {
		t.Errorf("paused: plan %+v %s; want every group held", one(p), p.State)
	}
}

func TestARoleRestartDuringARolloutRidesAlongInLockstep(t *testing.T) {
	in := pd(2, 6, 0, 1)
	in.Roles[1].Old, in.Roles[1].Restarting = 3, 3 // half of decode old, half on the revision waiting for its restart
	p := roleplan.Next(in)
	if p.Restart || one(p) != (shape{2, 1, 6, 1}) || p.Steps != 6 {
		t.Errorf("plan %+v restart %v, %d steps; want the lockstep rollout's first step", one(p), p.Restart, p.Steps)
	}
}

// A held canary reports the step it is held at, the first where every role has its canary
// groups, not the last step of the plan (its capped shapes make every later step look done).
func TestAHeldCanaryReportsTheStepItIsHeldAt(t *testing.T) {
	for _, tc := range []struct {
		name                        string
		prefill, decode             int32
		surge, unavailable          int32
		canaryPrefill, canaryDecode int32
		wantStep, wantSteps         int
	}{
		{name: "1 group of each, no surge", prefill: 2, decode: 6, unavailable: 1, canaryPrefill: 1, canaryDecode: 1, wantStep: 1, wantSteps: 6},
		{name: "1 group of each, surge", prefill: 2, decode: 6, surge: 1, canaryPrefill: 1, canaryDecode: 1, wantStep: 1, wantSteps: 8},
		{name: "25%: 1 prefill, 2 decode", prefill: 2, decode: 6, unavailable: 1, canaryPrefill: 1, canaryDecode: 2, wantStep: 2, wantSteps: 6},
		{name: "half of each", prefill: 2, decode: 6, unavailable: 1, canaryPrefill: 1, canaryDecode: 3, wantStep: 3, wantSteps: 6},
		{name: "batches of 2", prefill: 4, decode: 8, surge: 1, unavailable: 1, canaryPrefill: 1, canaryDecode: 2, wantStep: 1, wantSteps: 6},
		{name: "every prefill group, 1 decode", prefill: 2, decode: 6, unavailable: 1, canaryPrefill: 2, canaryDecode: 1, wantStep: 4, wantSteps: 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := pd(tc.prefill, tc.decode, tc.surge, tc.unavailable)
			in.Roles[0].Canary, in.Roles[1].Canary = ptr.To(tc.canaryPrefill), ptr.To(tc.canaryDecode)
			got := roleplan.Steps(in)
			held := got[len(got)-1]
			if held.State != roleplan.CanaryHeld || held.Step != tc.wantStep || held.Steps != tc.wantSteps {
				t.Errorf("held plan: %s at step %d of %d, want CanaryHeld at step %d of %d", held.State, held.Step, held.Steps, tc.wantStep, tc.wantSteps)
			}
			last := 0 // the steps up to the hold climb to it (steps the canary leaves unchanged are skipped)
			for i, p := range got[:len(got)-1] {
				if p.State != roleplan.Progressing || p.Step <= last || p.Step > tc.wantStep {
					t.Errorf("plan %d: %s at step %d, want Progressing at a step after %d, at most %d", i, p.State, p.Step, last, tc.wantStep)
				}
				last = p.Step
			}
			// A canary raised mid-rollout (more new groups than the canary) holds where it is,
			// at the canary's step, taking no new group back.
			for i, c := range []int32{tc.canaryPrefill, tc.canaryDecode} {
				r := &in.Roles[i]
				u := max(min(c, r.Desired), r.Desired-1)
				r.Updated, r.Old, r.ReadyUpdated = u, r.Desired-u, u
			}
			if p := roleplan.Next(in); p.State != roleplan.CanaryHeld || p.Step != tc.wantStep || p.Roles[1].Updated != tc.decode-1 {
				t.Errorf("raised canary: %s at step %d, decode updated %d; want CanaryHeld at step %d keeping %d", p.State, p.Step, p.Roles[1].Updated, tc.wantStep, tc.decode-1)
			}
		})
	}
}
