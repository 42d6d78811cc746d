package operator

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	lwsac "sigs.k8s.io/lws/client-go/applyconfiguration/leaderworkerset/v1"
	lwswebhooks "sigs.k8s.io/lws/pkg/webhooks"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/roleplan"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

func typedLWS(t *testing.T, ac *lwsac.LeaderWorkerSetApplyConfiguration) *lwsv1.LeaderWorkerSet {
	t.Helper()
	raw, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	lws := &lwsv1.LeaderWorkerSet{}
	if err := json.Unmarshal(raw, lws); err != nil {
		t.Fatal(err)
	}
	return lws
}

// The embedded LWS webhooks skip the operator's own LeaderWorkerSet writes, so every
// LeaderWorkerSet the operator builds must be one LWS's defaulting leaves as it is and LWS's
// validation accepts, on create and on each update the operator makes of it (a new revision,
// another group count, a partition), for every shape of serving.
func TestTheOperatorsLeaderWorkerSetsAreAsLWSsWebhooksWouldAdmitThem(t *testing.T) {
	ctx := context.Background()
	hook := &lwswebhooks.LeaderWorkerSetWebhook{}
	withUID := func(ms *v1.ModelServing) *v1.ModelServing { ms.UID = "uid-1"; return ms }
	none := withUID(fixtures.Serving("none", "ns").GroupSize(2).Obj())
	none.Spec.RestartPolicy = v1.RestartPolicyNone
	exclusive := withUID(fixtures.Serving("excl", "ns").GroupSize(4).Replicas(2).Obj())
	exclusive.Spec.Scheduling.ExclusiveTopology = "topology.kubernetes.io/zone"
	servings := []*v1.ModelServing{
		withUID(fixtures.Serving("one", "ns").Obj()),
		withUID(fixtures.Serving("canary", "ns").GPUs(8).GroupSize(2).Replicas(4).Partition(2).Obj()),
		withUID(fixtures.Serving("surge", "ns").GroupSize(2).Replicas(4).Surge(intstr.FromInt32(1), intstr.FromInt32(0)).Obj()),
		withUID(fixtures.Serving("pct", "ns").GroupSize(3).Replicas(10).Surge(intstr.FromString("25%"), intstr.FromString("100%")).Obj()),
		withUID(fixtures.Serving("zero", "ns").Replicas(0).Obj()),
		withUID(fixtures.Serving("big", "ns").GroupSize(64).Replicas(1000).Restart("r-1").Obj()),
		none, exclusive,
	}
	type step struct {
		name     string
		lws      *lwsac.LeaderWorkerSetApplyConfiguration
		replicas int32
	}
	var built [][]step // per serving (or role), its LeaderWorkerSet as the operator makes it over time
	for _, ms := range servings {
		var steps []step
		for i, rev := range []string{"r1", "r1", "r2"} {
			replicas := ptr.Deref(ms.Spec.Replicas, 1) + int32(i)
			lws, err := DesiredLeaderWorkerSet(LWSInput{Serving: ms, Revision: ms.Name + "-" + rev, RevisionSpec: fixtures.RevisionSpec(t, ms.Spec), Replicas: replicas})
			if err != nil {
				t.Fatal(err)
			}
			steps = append(steps, step{ms.Name, lws, replicas})
		}
		built = append(built, steps)
	}
	pd := withUID(fixtures.Serving("pd", "ns").Roles(2, 6, 2).Obj())
	for _, role := range v1.RoleNames() {
		var steps []step
		for _, target := range []roleplan.Target{{Replicas: 0}, {Replicas: 2, Updated: 0}, {Replicas: 3, Updated: 1}, {Replicas: 2, Updated: 2}} {
			target.Name = role
			lws, err := DesiredRoleLeaderWorkerSet(RoleLWSInput{Serving: pd, Role: role, Revision: "pd-r2", RevisionSpec: fixtures.RevisionSpec(t, pd.Spec), Target: target})
			if err != nil {
				t.Fatal(err)
			}
			steps = append(steps, step{"pd/" + string(role), lws, target.Replicas})
		}
		built = append(built, steps)
	}
	for _, steps := range built {
		var prev *lwsv1.LeaderWorkerSet
		for _, s := range steps {
			if err := admitLWS(ctx, s.lws); err != nil {
				t.Errorf("%s with %d groups: admitLWS: %v", s.name, s.replicas, err)
			}
			lws := typedLWS(t, s.lws)
			defaulted := lws.DeepCopy()
			if err := hook.Default(ctx, defaulted); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(lws, defaulted) {
				t.Errorf("%s: LWS's defaulting changes the LeaderWorkerSet the operator builds:\n%+v\n%+v", s.name, lws.Spec, defaulted.Spec)
			}
			if _, err := hook.ValidateCreate(ctx, lws); err != nil {
				t.Errorf("%s with %d groups: LWS's validation refuses its create: %v", s.name, s.replicas, err)
			}
			if prev != nil {
				if _, err := hook.ValidateUpdate(ctx, prev, lws); err != nil {
					t.Errorf("%s with %d groups: LWS's validation refuses the update: %v", s.name, s.replicas, err)
				}
			}
			prev = lws
		}
	}
}

// A serving whose LeaderWorkerSet LWS's validation would refuse (maxUnavailable 1% of one group
// rounds down to 0, with maxSurge 0: a rollout could never move) gets the refusal as its spec
// error, naming the field, and nothing is written.
func TestALeaderWorkerSetLWSWouldRefuseIsTheServingsSpecError(t *testing.T) {
	ms := fixtures.Serving("stuck", "ns").GroupSize(2).Replicas(1).Surge(intstr.FromInt32(0), intstr.FromString("1%")).Obj()
	ms.UID = "uid-1"
	lws, err := DesiredLeaderWorkerSet(LWSInput{Serving: ms, Revision: "stuck-r1", RevisionSpec: fixtures.RevisionSpec(t, ms.Spec), Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	err = admitLWS(context.Background(), lws)
	var se *specError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "maxUnavailable") || !strings.Contains(err.Error(), "spec.rollout") {
		t.Fatalf("admitLWS = %v; want a spec error naming maxUnavailable and spec.rollout", err)
	}
	// Two groups: 1% of 2 still rounds down to 0.
	if err := admitLWS(context.Background(), mustLWS(t, ms, 2)); err == nil {
		t.Error("maxUnavailable 1% of 2 groups with maxSurge 0: admitted")
	}
	// One group more than nothing: with maxUnavailable 1 it is admitted.
	ok := fixtures.Serving("fine", "ns").GroupSize(2).Replicas(1).Surge(intstr.FromInt32(0), intstr.FromInt32(1)).Obj()
	ok.UID = "uid-2"
	if err := admitLWS(context.Background(), mustLWS(t, ok, 1)); err != nil {
		t.Errorf("maxUnavailable 1 with maxSurge 0: %v", err)
	}
}

func mustLWS(t *testing.T, ms *v1.ModelServing, replicas int32) *lwsac.LeaderWorkerSetApplyConfiguration {
	t.Helper()
	lws, err := DesiredLeaderWorkerSet(LWSInput{Serving: ms, Revision: ms.Name + "-r1", RevisionSpec: fixtures.RevisionSpec(t, ms.Spec), Replicas: replicas})
	if err != nil {
		t.Fatal(err)
	}
	return lws
}

// The match condition is on the two LeaderWorkerSet webhooks only (pods are made by the
// StatefulSet controller, never by the operator) and only once the operator's user is known.
func TestOnlyTheLWSWebhooksSkipTheOperatorsOwnWrites(t *testing.T) {
	o := DefaultWebhookOptions()
	m, val := WebhookConfigurations(o, []byte("ca"))
	for _, w := range m.Webhooks {
		if len(w.MatchConditions) != 0 {
			t.Errorf("without the operator's user, %s has match conditions", *w.Name)
		}
	}
	o.OperatorUser = `system:serviceaccount:kubectl-llm-system:kubectl-llm-operator`
	m, val = WebhookConfigurations(o, []byte("ca"))
	conds := map[string]int{}
	for _, w := range m.Webhooks {
		conds[*w.Name] = len(w.MatchConditions)
	}
	for _, w := range val.Webhooks {
		conds[*w.Name] = len(w.MatchConditions)
		for _, c := range w.MatchConditions {
			if !strings.Contains(*c.Expression, `"system:serviceaccount:kubectl-llm-system:kubectl-llm-operator"`) ||
				!strings.Contains(*c.Expression, `"app.kubernetes.io/managed-by"`) {
				t.Errorf("%s: condition %s does not name the operator and our label", *w.Name, *c.Expression)
			}
		}
	}
	want := map[string]int{"mleaderworkerset.kubectl-llm.dev": 1, "vleaderworkerset.kubectl-llm.dev": 1, "mpod.kubectl-llm.dev": 0, "vpod.kubectl-llm.dev": 0}
	for name, n := range want {
		if conds[name] != n {
			t.Errorf("%s has %d match conditions, want %d", name, conds[name], n)
		}
	}
	// A user name with a quote stays one string literal.
	c := ownLWSWritesCondition(`o"dd\user`)
	if !strings.Contains(*c.Expression, `"o\"dd\\user"`) {
		t.Errorf("the user is not quoted: %s", *c.Expression)
	}
}
