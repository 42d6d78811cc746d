package operator

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/roleplan"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// roleShape is what a test asks of one role's LWS: groups, partition and the LWS's own limit.
type roleShape struct {
	Replicas, Partition int32
	MaxUnavailable      string
	Revision            string
}

func shapeOf(ri roleIntent) roleShape {
	if ri.lws == nil {
		return roleShape{}
	}
	ru := ri.lws.Spec.RolloutStrategy.RollingUpdateConfiguration
	return roleShape{
		Replicas: ptr.Deref(ri.lws.Spec.Replicas, -1), Partition: ptr.Deref(ru.Partition, -1),
		MaxUnavailable: ru.MaxUnavailable.String(),
		Revision:       ri.lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Labels[v1.LabelRevision],
	}
}

// pdPods are the pods of a 2:6 serving whose prefill groups >= pNew and decode groups >= dNew
// run revision newRev (the others oldRev); the groups listed in unready are not ready.
func pdPods(pNew, dNew int, oldRev, newRev string, unready ...string) []corev1.Pod {
	var pods []corev1.Pod
	add := func(role v1.RoleName, n, from int) {
		for g := range n {
			rev := oldRev
			if g >= from {
				rev = newRev
			}
			for _, p := range fixtures.RoleGroup("qwen", role, g, 2, rev) {
				for _, u := range unready {
					if u == string(role)+"-"+p.Labels[lwsv1.GroupIndexLabelKey] {
						p.Status.Conditions[1].Status = corev1.ConditionFalse
					}
				}
				pods = append(pods, p)
			}
		}
	}
	add(v1.RolePrefill, 2, pNew)
	add(v1.RoleDecode, 6, dNew)
	return pods
}

// pdObserved is what a pass of a 2:6 serving reads: its role LWSs (partition as given) and pods.
func pdObserved(ms *v1.ModelServing, pods []corev1.Pod, lwsRev string, pPart, dPart int32, revs ...appsv1.ControllerRevision) *observed {
	obs := &observed{serving: ms, pods: pods, revisions: revs}
	for _, r := range []struct {
		name     v1.RoleName
		replicas int32
		part     int32
	}{{v1.RolePrefill, 2, pPart}, {v1.RoleDecode, 6, dPart}} {
		lws := &lwsv1.LeaderWorkerSet{}
		lws.Name, lws.Namespace = naming.RoleWorkloadName(ms.Name, r.name), ms.Namespace
		lws.Spec.Replicas = ptr.To(r.replicas)
		lws.Spec.RolloutStrategy.RollingUpdateConfiguration = &lwsv1.RollingUpdateConfiguration{Partition: ptr.To(r.part)}
		lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Labels = map[string]string{v1.LabelRevision: lwsRev}
		ro := observedRole{name: r.name, lws: lws}
		for _, p := range pods {
			if p.Labels[naming.LabelRole] == string(r.name) {
				ro.pods = append(ro.pods, p)
			}
		}
		obs.roles = append(obs.roles, ro)
	}
	return obs
}

func TestComputeRolesMovesEveryRoleByThePlanner(t *testing.T) {
	v1ms := fixtures.Serving("qwen", "ns").Roles(2, 6, 2).GPUs(1).Image("vllm/vllm-openai:v1").Obj()
	v2ms := fixtures.Serving("qwen", "ns").Roles(2, 6, 2).GPUs(1).Image("vllm/vllm-openai:v2").Obj()
	v1rev, v2rev := revName(t, v1ms), revName(t, v2ms)
	rolling := func(ms *v1.ModelServing) *v1.ModelServing {
		ms = ms.DeepCopy()
		ms.Status.UpdateRevision, ms.Status.CurrentRevision = v1rev, v1rev
		return ms
	}
	cases := []struct {
		name            string
		obs             func() *observed
		prefill, decode roleShape
		create          string
		state           roleplan.State
		why             string
	}{
		{
			name:    "a new serving records one revision and asks every role for all its groups, each LWS's own limits out of the way",
			obs:     func() *observed { return &observed{serving: v1ms.DeepCopy()} },
			prefill: roleShape{2, 0, "2", v1rev}, decode: roleShape{6, 0, "6", v1rev},
			create: v1rev, state: roleplan.Progressing,
		},
		{
			name: "a converged serving keeps every role where it is and records nothing",
			obs: func() *observed {
				ms := v1ms.DeepCopy()
				ms.Status.UpdateRevision, ms.Status.CurrentRevision = v1rev, v1rev
				return pdObserved(ms, pdPods(2, 6, v1rev, v1rev), v1rev, 0, 0, recorded(t, v1ms, 1))
			},
			prefill: roleShape{2, 0, "2", v1rev}, decode: roleShape{6, 0, "6", v1rev}, state: roleplan.Complete,
		},
		{
			name: "a new image records one revision for the topology and moves one group of each role (step 1 of 6)",
			obs: func() *observed {
				return pdObserved(rolling(v2ms), pdPods(2, 6, v1rev, v2rev), v1rev, 0, 0, recorded(t, v1ms, 1))
			},
			prefill: roleShape{2, 1, "2", v2rev}, decode: roleShape{6, 5, "6", v2rev},
			create: v2rev, state: roleplan.Progressing,
		},
		{
			name: "step 1 ready in every role: decode moves on to step 2 while prefill stays at 1 of 2",
			obs: func() *observed {
				return pdObserved(rolling(v2ms), pdPods(1, 5, v1rev, v2rev), v2rev, 1, 5, recorded(t, v1ms, 1), recorded(t, v2ms, 2))
			},
			prefill: roleShape{2, 1, "2", v2rev}, decode: roleShape{6, 4, "6", v2rev}, state: roleplan.Progressing,
		},
		{
			name: "a role whose new group is not ready holds the other: decode waits for prefill",
			obs: func() *observed {
				return pdObserved(rolling(v2ms), pdPods(1, 5, v1rev, v2rev, "prefill-1"), v2rev, 1, 5, recorded(t, v1ms, 1), recorded(t, v2ms, 2))
			},
			prefill: roleShape{2, 1, "2", v2rev}, decode: roleShape{6, 5, "6", v2rev},
			state: roleplan.Waiting, why: "prefill: 0 of 1 new groups ready",
		},
		{
			name: "paused, every role holds: the partition keeps every group where it is",
			obs: func() *observed {
				ms := rolling(v2ms)
				ms.Spec.Rollout.Paused = true
				return pdObserved(ms, pdPods(2, 6, v1rev, v2rev), v1rev, 0, 0, recorded(t, v1ms, 1))
			},
			prefill: roleShape{2, 2, "2", v2rev}, decode: roleShape{6, 6, "6", v2rev},
			create: v2rev, state: roleplan.Paused, why: "paused",
		},
		{
			name: "a leader being recreated at or above the partition is a new group, not an old one",
			obs: func() *observed {
				pods := pdPods(1, 5, v1rev, v2rev)
				// prefill group 1 lost its leader: only its worker is left.
				pods = append(pods[:2:2], pods[3:]...)
				return pdObserved(rolling(v2ms), pods, v2rev, 1, 5, recorded(t, v1ms, 1), recorded(t, v2ms, 2))
			},
			prefill: roleShape{2, 1, "2", v2rev}, decode: roleShape{6, 5, "6", v2rev},
			state: roleplan.Waiting, why: "prefill: 0 of 1 new groups ready",
		},
		{
			name: "a canary of one group per role holds once both canary groups are ready",
			obs: func() *observed {
				ms := rolling(v2ms)
				ms.Spec.Roles[0].Rollout = &v1.RoleRolloutSpec{Partition: ptr.To[int32](1)}
				ms.Spec.Roles[1].Rollout = &v1.RoleRolloutSpec{Partition: ptr.To[int32](5)}
				return pdObserved(ms, pdPods(1, 5, v1rev, v2rev), v2rev, 1, 5, recorded(t, v1ms, 1), recorded(t, v2ms, 2))
			},
			prefill: roleShape{2, 1, "2", v2rev}, decode: roleShape{6, 5, "6", v2rev},
			state: roleplan.CanaryHeld, why: "canary: prefill 1 of 2, decode 1 of 6",
		},
		{
			name: "surge: a surplus group on its way out is not counted, so the rollout never goes back to the step that added it",
			obs: func() *observed {
				ms := rolling(v2ms)
				ms.Spec.Rollout.MaxSurge, ms.Spec.Rollout.MaxUnavailable = ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromInt32(0))
				pods := pdPods(0, 0, v2rev, v2rev)
				// The LWSs are down to 2 and 6 again; the surplus groups' pods terminate, prefill's
				// leader is already gone. The cached decode LWS still says 7 (older than our apply).
				pods = append(pods, fixtures.RoleGroup("qwen", v1.RolePrefill, 2, 2, v2rev)[1:]...)
				for _, p := range fixtures.RoleGroup("qwen", v1.RoleDecode, 6, 2, v2rev) {
					p.DeletionTimestamp = ptr.To(metav1.NewTime(computeNow))
					pods = append(pods, p)
				}
				obs := pdObserved(ms, pods, v2rev, 0, 0, recorded(t, v1ms, 1), recorded(t, v2ms, 2))
				obs.roles[1].lws.Spec.Replicas = ptr.To[int32](7)
				return obs
			},
			prefill: roleShape{2, 0, "2", v2rev}, decode: roleShape{6, 0, "6", v2rev}, state: roleplan.Complete,
		},
		{
			name: "a restart of decode alone (spec.roles[].restart) moves decode by its own limits and leaves prefill where it is",
			obs: func() *observed {
				ms := rolling(v1ms)
				ms.Spec.Roles[1].Restart = &v1.RoleRestartSpec{ID: "r1"}
				return pdObserved(ms, pdPods(2, 6, v1rev, v1rev), v1rev, 0, 0, recorded(t, v1ms, 1))
			},
			prefill: roleShape{2, 0, "2", v1rev}, decode: roleShape{6, 5, "6", v1rev}, state: roleplan.Progressing,
		},
		{
			name: "a restart of decode alone waits for decode's own new group, not for prefill",
			obs: func() *observed {
				ms := rolling(v1ms)
				ms.Spec.Roles[1].Restart = &v1.RoleRestartSpec{ID: "r1"}
				pods := pdPods(2, 6, v1rev, v1rev, "decode-5")
				for i := range pods {
					if pods[i].Labels[naming.LabelRole] == "decode" && pods[i].Labels[lwsv1.GroupIndexLabelKey] == "5" {
						pods[i].Annotations = map[string]string{v1.AnnotationRestartID: v1.RoleRestartID("", "r1")}
					}
				}
				return pdObserved(ms, pods, v1rev, 0, 5, recorded(t, v1ms, 1))
			},
			prefill: roleShape{2, 0, "2", v1rev}, decode: roleShape{6, 5, "6", v1rev},
			state: roleplan.Waiting, why: "decode restart: 0 of 1 new groups ready",
		},
		{
			name: "a restart of the serving (spec.restart) moves every role in lockstep",
			obs: func() *observed {
				ms := rolling(v1ms)
				ms.Spec.Restart = &v1.RestartSpec{ID: "s1"}
				return pdObserved(ms, pdPods(2, 6, v1rev, v1rev), v1rev, 0, 0, recorded(t, v1ms, 1))
			},
			prefill: roleShape{2, 1, "2", v1rev}, decode: roleShape{6, 5, "6", v1rev}, state: roleplan.Progressing,
		},
		{
			name: "Recreate stops the old groups of every role first",
			obs: func() *observed {
				ms := rolling(v2ms)
				ms.Spec.Rollout.Strategy = v1.Recreate
				return pdObserved(ms, pdPods(2, 6, v1rev, v2rev), v1rev, 0, 0, recorded(t, v1ms, 1))
			},
			prefill: roleShape{0, 0, "1", v2rev}, decode: roleShape{0, 0, "1", v2rev},
			create: v2rev, state: roleplan.Progressing, why: "Recreate",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := tc.obs()
			got := compute(obs, computeInput{now: computeNow})
			if got.specErr != nil {
				t.Fatalf("spec error: %v", got.specErr)
			}
			if got.lws != nil || got.service != nil {
				t.Fatalf("a serving with roles got the single-role children")
			}
			if len(got.roles) != 2 || got.roles[0].name != v1.RolePrefill || got.roles[1].name != v1.RoleDecode {
				t.Fatalf("roles = %+v, want prefill and decode", got.roles)
			}
			if d := cmp.Diff([]roleShape{tc.prefill, tc.decode}, []roleShape{shapeOf(got.roles[0]), shapeOf(got.roles[1])}); d != "" {
				t.Errorf("role LWSs (-want +got):\n%s", d)
			}
			if got.rolePlan.State != tc.state || !strings.Contains(got.rolePlan.Why, tc.why) {
				t.Errorf("plan %s (%q), want %s with %q", got.rolePlan.State, got.rolePlan.Why, tc.state, tc.why)
			}
			switch {
			case tc.create == "" && got.createRevision != nil:
				t.Errorf("created revision %s, want none", got.createRevision.Name)
			case tc.create != "" && (got.createRevision == nil || got.createRevision.Name != tc.create):
				t.Errorf("created %v, want %s", got.createRevision, tc.create)
			}
		})
	}
}

func TestComputeRolesChildren(t *testing.T) {
	ms := fixtures.Serving("qwen", "ns").Roles(2, 6, 2).GPUs(1).Obj()
	obs := &observed{serving: ms, roles: []observedRole{{name: v1.RolePrefill, lwsConflict: true}, {name: v1.RoleDecode, serviceConflict: true}}}
	got := compute(obs, computeInput{now: computeNow})
	if got.specErr != nil {
		t.Fatal(got.specErr)
	}
	prefill, decode := got.roles[0], got.roles[1]
	if prefill.lws != nil || prefill.service == nil || decode.lws == nil || decode.service != nil {
		t.Fatalf("a taken name must keep only that child from being applied: prefill lws %v service %v, decode lws %v service %v",
			prefill.lws != nil, prefill.service != nil, decode.lws != nil, decode.service != nil)
	}
	lws := decode.lws
	if *lws.Name != "qwen-decode" {
		t.Errorf("LWS name = %s, want qwen-decode", *lws.Name)
	}
	// The children cache holds objects by the serving's name label; the role label says which.
	want := map[string]string{v1.LabelName: "qwen", v1.LabelManagedBy: v1.ManagedByValue, naming.LabelRole: "decode"}
	if d := cmp.Diff(want, lws.Labels); d != "" {
		t.Errorf("LWS labels (-want +got):\n%s", d)
	}
	if ms := lws.Spec.RolloutStrategy.RollingUpdateConfiguration.MaxSurge; *ms != intstr.FromInt32(0) {
		t.Errorf("maxSurge = %s, want 0: the planner adds surge groups through replicas", ms.String())
	}
	pod := lws.Spec.LeaderWorkerTemplate.LeaderTemplate
	if pod.Labels[naming.LabelRole] != "decode" || !strings.Contains(strings.Join(pod.Spec.Containers[0].Args, " "), "kv_consumer") {
		t.Errorf("decode leader template: labels %v, args %v", pod.Labels, pod.Spec.Containers[0].Args)
	}
	svc := prefill.service
	if *svc.Name != "qwen-prefill-api" || svc.Spec.Selector[naming.LabelRole] != "prefill" || svc.Labels[v1.LabelName] != "qwen" {
		t.Errorf("prefill Service %s selects %v, labels %v", *svc.Name, svc.Spec.Selector, svc.Labels)
	}
}

func TestARoleRestartIDIsStampedOnThatRolesTemplateOnly(t *testing.T) {
	ms := fixtures.Serving("qwen", "ns").Roles(2, 6, 2).GPUs(1).Obj()
	ms.Spec.Restart = &v1.RestartSpec{ID: "s1"}
	ms.Spec.Roles[1].Restart = &v1.RoleRestartSpec{ID: "r1"}
	got := compute(&observed{serving: ms}, computeInput{now: computeNow})
	if got.specErr != nil {
		t.Fatal(got.specErr)
	}
	want := map[v1.RoleName]string{v1.RolePrefill: "s1", v1.RoleDecode: "s1/role:r1"}
	for _, ri := range got.roles {
		for _, tmpl := range []string{"leader", "worker"} {
			pt := ri.lws.Spec.LeaderWorkerTemplate.WorkerTemplate
			if tmpl == "leader" {
				pt = ri.lws.Spec.LeaderWorkerTemplate.LeaderTemplate
			}
			if id := pt.Annotations[v1.AnnotationRestartID]; id != want[ri.name] {
				t.Errorf("%s %s template restart id %q, want %q", ri.name, tmpl, id, want[ri.name])
			}
		}
	}
}
