package operator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	dsv1 "sigs.k8s.io/lws/api/disaggregatedset/v1"
	lwsac "sigs.k8s.io/lws/client-go/applyconfiguration/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/roleplan"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// withRoles gives a serving prefill and decode roles of groupSize pods each.
func withRoles(ms *v1.ModelServing, groupSize int32) *v1.ModelServing {
	ms.Spec.Engine.Args = []string{"--max-model-len", "8192"}
	ms.Spec.Roles = []v1.RoleSpec{
		{Name: v1.RolePrefill, Replicas: ptr.To[int32](2), GroupSize: ptr.To(groupSize), Args: []string{"--enforce-eager"}},
		{Name: v1.RoleDecode, Replicas: ptr.To[int32](6), GroupSize: ptr.To(groupSize)},
	}
	return ms
}

func TestRoleEngineCommandLines(t *testing.T) {
	nixl := func(kvRole string) []string {
		return []string{"--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"` + kvRole + `"}`}
	}
	vllm := []string{"--host", "0.0.0.0", "--port", "8000", "--tensor-parallel-size", "1"}
	sglang := []string{"--model-path", "Qwen/Qwen3-0.6B", "--host", "0.0.0.0", "--port", "8000", "--tp-size", "2"}
	sglangNodes := []string{"--dist-init-addr", "$(LWS_LEADER_ADDRESS):20000", "--nnodes", "$(LWS_GROUP_SIZE)", "--node-rank", "$(LWS_WORKER_INDEX)"}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	user := []string{"--max-model-len", "8192"}
	for _, tc := range []struct {
		name      string
		engine    v1.EngineType
		groupSize int32
		role      v1.RoleName
		member    Role
		command   []string
		args      []string
	}{
		{"vLLM prefill", v1.EngineVLLM, 1, v1.RolePrefill, Leader, []string{"vllm", "serve", "Qwen/Qwen3-0.6B"},
			cat(vllm, nixl("kv_producer"), user, []string{"--enforce-eager"})},
		{"vLLM decode", v1.EngineVLLM, 1, v1.RoleDecode, Leader, []string{"vllm", "serve", "Qwen/Qwen3-0.6B"},
			cat(vllm, nixl("kv_consumer"), user)},
		// Multi-node vLLM: the flags reach vllm serve through the leader script's "$@".
		{"vLLM decode leader of 2 pods", v1.EngineVLLM, 2, v1.RoleDecode, Leader, nil, cat(nixl("kv_consumer"), user)},
		{"vLLM decode worker of 2 pods", v1.EngineVLLM, 2, v1.RoleDecode, Worker, nil, nil},
		{"SGLang prefill of 2 pods", v1.EngineSGLang, 2, v1.RolePrefill, Worker, []string{"python3", "-m", "sglang.launch_server"},
			cat(sglang, sglangNodes, []string{"--disaggregation-mode", "prefill", "--disaggregation-transfer-backend", "nixl",
				"--disaggregation-bootstrap-port", "8998"}, user, []string{"--enforce-eager"})},
		{"SGLang decode of 2 pods", v1.EngineSGLang, 2, v1.RoleDecode, Leader, []string{"python3", "-m", "sglang.launch_server"},
			cat(sglang, sglangNodes, []string{"--disaggregation-mode", "decode", "--disaggregation-transfer-backend", "nixl"}, user)},
		{"custom prefill", v1.EngineCustom, 1, v1.RolePrefill, Leader, nil, cat(user, []string{"--enforce-eager"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := withRoles(fixtures.Serving("pd", "ns").Engine(tc.engine).Obj(), tc.groupSize)
			command, args, err := RoleEngineCommand(ms.Spec, tc.role, tc.member)
			if err != nil {
				t.Fatal(err)
			}
			if tc.command != nil {
				if diff := cmp.Diff(tc.command, command); diff != "" {
					t.Errorf("command (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tc.args, args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
	if _, _, err := RoleEngineCommand(fixtures.Serving("single", "ns").Obj().Spec, v1.RoleDecode, Leader); err == nil {
		t.Error("a command line for a role the serving does not have")
	}
}

func TestRolePodTemplateCarriesTheRoleAndItsOwnResources(t *testing.T) {
	ms := withRoles(fixtures.Serving("pd", "ns").GPUs(8).Obj(), 1)
	ms.Spec.Roles[1].Resources.GPUs = ptr.To[int32](2)
	overlay := &corev1.PodTemplateSpec{}
	overlay.Labels = map[string]string{naming.LabelRole: "prefill", "team": "search"}
	in := TemplateInput{Name: "pd", Revision: "pd-abc", Spec: ms.Spec, Overlay: overlay}

	pod, err := RolePodTemplate(in, v1.RoleDecode, Leader)
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		v1.LabelName: "pd", v1.LabelRevision: "pd-abc", v1.LabelManagedBy: v1.ManagedByValue,
		naming.LabelRole: "decode", naming.LabelLLMDRole: "decode", "team": "search",
		naming.LabelDisaggregatedRole: "decode", naming.LabelDisaggregatedRevision: "pd-abc",
	}
	if diff := cmp.Diff(wantLabels, pod.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	engine := pod.Spec.Containers[0]
	if got := engine.Resources.Limits[GPUResource]; !got.Equal(resource.MustParse("2")) {
		t.Errorf("decode GPUs = %s, want the role's 2", got.String())
	}
	wantPorts := []corev1.ContainerPort{
		{Name: "http", ContainerPort: 8000, Protocol: corev1.ProtocolTCP},
		{Name: "nixl", ContainerPort: NixlSideChannelPort, Protocol: corev1.ProtocolTCP},
	}
	if diff := cmp.Diff(wantPorts, engine.Ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	var host *corev1.EnvVar
	for i := range engine.Env {
		if engine.Env[i].Name == "VLLM_NIXL_SIDE_CHANNEL_HOST" {
			host = &engine.Env[i]
		}
	}
	if host == nil || host.ValueFrom == nil || host.ValueFrom.FieldRef.FieldPath != "status.podIP" {
		t.Errorf("VLLM_NIXL_SIDE_CHANNEL_HOST = %+v, want the pod's IP", host)
	}

	worker, err := RolePodTemplate(in, v1.RolePrefill, Worker)
	if err != nil {
		t.Fatal(err)
	}
	if worker.Labels[naming.LabelRole] != "prefill" || len(worker.Spec.Containers[0].Ports) != 0 {
		t.Errorf("prefill worker: role %q, ports %v; want prefill and no ports", worker.Labels[naming.LabelRole], worker.Spec.Containers[0].Ports)
	}
}

// templateLabels are the leader's and the worker's pod template labels of an LWS apply
// configuration.
func templateLabels(t *testing.T, lws *lwsac.LeaderWorkerSetApplyConfiguration) (leader, worker map[string]string) {
	t.Helper()
	tmpl := lws.Spec.LeaderWorkerTemplate
	if tmpl.WorkerTemplate == nil {
		t.Fatal("no worker template")
	}
	if tmpl.LeaderTemplate != nil {
		leader = tmpl.LeaderTemplate.Labels
	}
	return leader, tmpl.WorkerTemplate.Labels
}

// TestRouterLabelsOnEveryRolePod: every pod of a role carries the labels routers read (llm-d's
// role label, DisaggregatedSet's role and revision labels, which llm-d's rollout screener reads),
// through its LWS templates. The revision label follows the revision, the role labels do not
// move; a serving without roles carries none of them, so its template (and its groups) stay
// as they are when the operator is upgraded.
func TestRouterLabelsOnEveryRolePod(t *testing.T) {
	if naming.LabelDisaggregatedRole != dsv1.RoleLabelKey || naming.LabelDisaggregatedRevision != dsv1.RevisionLabelKey {
		t.Errorf("DisaggregatedSet labels %s, %s; LWS has %s, %s", naming.LabelDisaggregatedRole, naming.LabelDisaggregatedRevision, dsv1.RoleLabelKey, dsv1.RevisionLabelKey)
	}
	ms := withRoles(fixtures.Serving("pd", "ns").Obj(), 2)
	labelsAt := func(role v1.RoleName, rev string) (map[string]string, map[string]string) {
		lws, err := DesiredRoleLeaderWorkerSet(RoleLWSInput{Serving: ms, Role: role, Revision: rev, RevisionSpec: fixtures.RevisionSpec(t, ms.Spec),
			Target: roleplan.Target{Name: role, Replicas: 2, Updated: 2}})
		if err != nil {
			t.Fatal(err)
		}
		return templateLabels(t, lws)
	}
	for _, role := range v1.RoleNames() {
		for _, rev := range []string{"pd-r1", "pd-r2"} {
			want := map[string]string{
				v1.LabelName: "pd", v1.LabelRevision: rev, v1.LabelManagedBy: v1.ManagedByValue,
				naming.LabelRole: string(role), naming.LabelLLMDRole: string(role),
				naming.LabelDisaggregatedRole: string(role), naming.LabelDisaggregatedRevision: rev,
			}
			leader, worker := labelsAt(role, rev)
			if d := cmp.Diff(want, leader); d != "" {
				t.Errorf("%s leader template at %s (-want +got):\n%s", role, rev, d)
			}
			if d := cmp.Diff(want, worker); d != "" {
				t.Errorf("%s worker template at %s (-want +got):\n%s", role, rev, d)
			}
		}
	}

	single := fixtures.Serving("one", "ns").GroupSize(2).Obj()
	lws, err := DesiredLeaderWorkerSet(LWSInput{Serving: single, Revision: "one-r1", RevisionSpec: fixtures.RevisionSpec(t, single.Spec), Replicas: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{v1.LabelName: "one", v1.LabelRevision: "one-r1", v1.LabelManagedBy: v1.ManagedByValue}
	leader, worker := templateLabels(t, lws)
	if d := cmp.Diff(want, leader); d != "" {
		t.Errorf("leader template of a serving without roles (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want, worker); d != "" {
		t.Errorf("worker template of a serving without roles (-want +got):\n%s", d)
	}
}
