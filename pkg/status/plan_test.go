package status_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/roleplan"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// rolePods are the pods of a 2:6 serving (groups of 2) whose prefill groups run prefill[i] and
// decode groups decode[i]; notReady names the decode groups whose leader is not ready.
func rolePods(prefill, decode []string, notReady ...int) []corev1.Pod {
	var pods []corev1.Pod
	for g, rev := range prefill {
		pods = append(pods, fixtures.RoleGroup("pd", v1.RolePrefill, g, 2, rev)...)
	}
	for g, rev := range decode {
		group := fixtures.RoleGroup("pd", v1.RoleDecode, g, 2, rev)
		for _, n := range notReady {
			if n == g {
				group[0].Status.Conditions[1].Status = corev1.ConditionFalse
			}
		}
		pods = append(pods, group...)
	}
	return pods
}

func planOf(t *testing.T, ms *v1.ModelServing, pods []corev1.Pod, lws map[v1.RoleName]*lwsv1.LeaderWorkerSet) roleplan.Plan {
	t.Helper()
	in, err := status.PlanInput(status.Observed{Serving: ms, Pods: pods, Roles: status.RoleInputs(ms, pods, lws)}, ms.Status.UpdateRevision, now)
	if err != nil {
		t.Fatal(err)
	}
	return roleplan.Next(in)
}

func TestPlanInputCountsEachRolesGroupsByRevision(t *testing.T) {
	ms := fixtures.Serving("pd", "default").Roles(2, 6, 2).Obj()
	ms.Status.CurrentRevision, ms.Status.UpdateRevision = "pd-r1", "pd-r2"
	pods := rolePods([]string{"pd-r1", "pd-r2"}, []string{"pd-r1", "pd-r1", "pd-r1", "pd-r1", "pd-r2", "pd-r2"}, 5)
	in, err := status.PlanInput(status.Observed{Serving: ms, Roles: status.RoleInputs(ms, pods, nil)}, "pd-r2", now)
	if err != nil {
		t.Fatal(err)
	}
	got := []roleplan.Role{in.Roles[0], in.Roles[1]}
	want := []roleplan.Role{
		{Name: v1.RolePrefill, Desired: 2, MaxUnavailable: 1, Updated: 1, ReadyUpdated: 1, Old: 1},
		{Name: v1.RoleDecode, Desired: 6, MaxUnavailable: 1, Updated: 2, ReadyUpdated: 1, Old: 4},
	}
	if d := cmp.Diff(want, got); d != "" || !in.RollingOut {
		t.Errorf("roles (-want +got):\n%s\nrolling out %v", d, in.RollingOut)
	}
	p := roleplan.Next(in)
	if p.Step != 2 || p.Steps != 6 || p.State != roleplan.Waiting || p.Why != "decode: 1 of 2 new groups ready" {
		t.Errorf("plan %+v, want step 2 of 6 waiting for decode", p)
	}
	if got := status.PlanStatus(p, "pd-r2"); got.Revision != "pd-r2" || got.Step != 2 || got.Steps != 6 || got.State != v1.PlanWaiting ||
		got.Message != p.Why || len(got.Roles) != 2 || got.Roles[1] != (v1.RolePlanTarget{Name: v1.RoleDecode, Replicas: 6, UpdatedReplicas: 2}) {
		t.Errorf("status.plan %+v", got)
	}
}

// A group whose leader is gone counts where its LeaderWorkerSet recreates it: above the
// partition on the update revision, below it on the old one.
func TestPlanInputCountsARecreatedGroupByThePartition(t *testing.T) {
	ms := fixtures.Serving("pd", "default").Roles(2, 6, 2).Obj()
	ms.Status.CurrentRevision, ms.Status.UpdateRevision = "pd-r1", "pd-r2"
	pods := rolePods([]string{"pd-r1", "pd-r2"}, []string{"pd-r1", "pd-r1", "pd-r1", "pd-r1", "pd-r1", "pd-r2"})
	// Decode groups 0 and 5 lost their leaders: only their workers remain.
	var kept []corev1.Pod
	for _, p := range pods {
		g := p.Labels[lwsv1.GroupIndexLabelKey]
		if p.Labels[naming.LabelRole] == string(v1.RoleDecode) && p.Labels[lwsv1.WorkerIndexLabelKey] == "0" && (g == "0" || g == "5") {
			continue
		}
		kept = append(kept, p)
	}
	decode := &lwsv1.LeaderWorkerSet{}
	decode.Spec.Replicas = ptr.To[int32](6)
	decode.Spec.LeaderWorkerTemplate.WorkerTemplate.Labels = map[string]string{v1.LabelRevision: "pd-r2"}
	decode.Spec.RolloutStrategy.RollingUpdateConfiguration = &lwsv1.RollingUpdateConfiguration{Partition: ptr.To[int32](5)}
	in, err := status.PlanInput(status.Observed{Serving: ms, Roles: status.RoleInputs(ms, kept, map[v1.RoleName]*lwsv1.LeaderWorkerSet{v1.RoleDecode: decode})}, "pd-r2", now)
	if err != nil {
		t.Fatal(err)
	}
	// Group 0, below the partition of a LWS that already carries the update revision, comes
	// back from it: it waits for a restart, not for the rollout.
	if r := in.Roles[1]; r.Updated != 1 || r.ReadyUpdated != 0 || r.Old != 4 || r.Restarting != 1 {
		t.Errorf("decode %+v, want group 5 new (not ready), group 0 restarting and 4 old", r)
	}
}

// A restart of decode alone is planned as decode's own steps, prefill staying at all its groups.
func TestPlanInputOfARoleRestartIsPlannedAlone(t *testing.T) {
	ms := fixtures.Serving("pd", "default").Roles(2, 6, 2).Obj()
	ms.Status.CurrentRevision, ms.Status.UpdateRevision = "pd-r1", "pd-r1"
	ms.Spec.Roles[1].Restart = &v1.RoleRestartSpec{ID: "d1"}
	pods := rolePods([]string{"pd-r1", "pd-r1"}, []string{"pd-r1", "pd-r1", "pd-r1", "pd-r1", "pd-r1", "pd-r1"})
	for i := range pods[len(pods)-2:] { // decode group 5 restarted already
		pods[len(pods)-2+i].Annotations = map[string]string{v1.AnnotationRestartID: v1.RoleRestartID("", "d1")}
	}
	plan := planOf(t, ms, pods, nil)
	if !plan.Restart || plan.Step != 2 || plan.Steps != 6 || plan.Roles[0].Updated != 2 || plan.Roles[1].Updated != 2 {
		t.Errorf("plan %+v; want decode's step 2 of 6 alone, prefill at its 2 groups", plan)
	}
}

// Without roles the serving is its one role, from the serving's own limits and groups.
func TestPlanInputOfAServingWithoutRoles(t *testing.T) {
	ms := fixtures.Serving("m", "default").Replicas(3).Obj()
	ms.Status.CurrentRevision = "m-r1"
	var pods []corev1.Pod
	for g, rev := range []string{"m-r1", "m-r1", "m-r2"} {
		pods = append(pods, fixtures.Group("m", g, 1, rev)...)
	}
	in, err := status.PlanInput(status.Observed{Serving: ms, Pods: pods}, "m-r2", now)
	if err != nil {
		t.Fatal(err)
	}
	want := []roleplan.Role{{Desired: 3, MaxUnavailable: 1, Updated: 1, ReadyUpdated: 1, Old: 2}}
	if d := cmp.Diff(want, in.Roles); d != "" || !in.RollingOut {
		t.Errorf("roles (-want +got):\n%s\nrolling out %v", d, in.RollingOut)
	}
	if status.PlanStatus(roleplan.Plan{}, "m-r2") != nil {
		t.Error("no plan made, yet a status.plan")
	}
}
