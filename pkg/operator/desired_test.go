package operator

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

func TestEngineCommandLines(t *testing.T) {
	type cmdline struct{ Command, Args []string }
	cases := []struct {
		name   string
		ms     *v1.ModelServing
		role   Role
		want   cmdline
		wantIn string // for shell scripts: a fragment of the script
	}{
		{
			name: "vLLM on one pod with one GPU",
			ms:   fixtures.Serving("qwen", "ns").GPUs(1).Obj(), role: Leader,
			want: cmdline{[]string{"vllm", "serve", "Qwen/Qwen3-0.6B"}, []string{"--host", "0.0.0.0", "--port", "8000", "--tensor-parallel-size", "1"}},
		},
		{
			name: "vLLM on one pod with 8 GPUs is tensor parallel 8",
			ms:   fixtures.Serving("qwen", "ns").GPUs(8).Obj(), role: Leader,
			want: cmdline{[]string{"vllm", "serve", "Qwen/Qwen3-0.6B"}, []string{"--host", "0.0.0.0", "--port", "8000", "--tensor-parallel-size", "8"}},
		},
		{
			name: "vLLM worker of a 2-pod group joins the leader's Ray head",
			ms:   fixtures.Serving("qwen", "ns").GPUs(8).GroupSize(2).Obj(), role: Worker,
			want: cmdline{[]string{"/bin/sh", "-c", "exec ray start --address=$LWS_LEADER_ADDRESS:6379 --block"}, nil},
		},
		{
			name: "SGLang of 2 pods × 4 GPUs is tensor parallel 8 across the group's ranks",
			ms:   fixtures.Serving("qwen", "ns").Engine(v1.EngineSGLang).GPUs(4).GroupSize(2).Obj(), role: Worker,
			want: cmdline{[]string{"python3", "-m", "sglang.launch_server"}, []string{
				"--model-path", "Qwen/Qwen3-0.6B", "--host", "0.0.0.0", "--port", "8000", "--tp-size", "8",
				"--dist-init-addr", "$(LWS_LEADER_ADDRESS):20000", "--nnodes", "$(LWS_GROUP_SIZE)", "--node-rank", "$(LWS_WORKER_INDEX)"}},
		},
		{
			name: "custom engine runs only the given args",
			ms: func() *v1.ModelServing {
				ms := fixtures.Serving("qwen", "ns").Engine(v1.EngineCustom).Image("example/engine:1").Obj()
				ms.Spec.Engine.Args = []string{"serve", "--fast"}
				return ms
			}(), role: Leader,
			want: cmdline{nil, []string{"serve", "--fast"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, a := EngineCommand(tc.ms.Spec, tc.role)
			if diff := cmp.Diff(tc.want, cmdline{c, a}); diff != "" {
				t.Errorf("command line (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVLLMLeaderOfAGroupWaitsForItsWorkersAndUsesPipelineParallel(t *testing.T) {
	ms := fixtures.Serving("qwen", "ns").GPUs(8).GroupSize(4).Obj()
	ms.Spec.Engine.Args = []string{"--max-model-len", "8192"}
	c, a := EngineCommand(ms.Spec, Leader)
	if len(c) != 4 || c[0] != "/bin/sh" || c[3] != "vllm" {
		t.Fatalf("command = %q, want /bin/sh -c <script> vllm", c)
	}
	for _, frag := range []string{"ray start --head --port=6379", `-ge "$LWS_GROUP_SIZE"`, `exec vllm serve "$LLM_MODEL"`,
		"--tensor-parallel-size 8", "--pipeline-parallel-size 4", "--distributed-executor-backend ray", `"$@"`} {
		if !strings.Contains(c[2], frag) {
			t.Errorf("leader script lacks %q:\n%s", frag, c[2])
		}
	}
	if diff := cmp.Diff([]string{"--max-model-len", "8192"}, a); diff != "" {
		t.Errorf("user args are passed as \"$@\" (-want +got):\n%s", diff)
	}
}

func TestPodTemplate(t *testing.T) {
	base := func() *fixtures.ServingBuilder { return fixtures.Serving("qwen", "ns").GPUs(2).GroupSize(2) }
	t.Run("GPUs are requested and limited alike, shm is memory, probes sized by the startup timeout", func(t *testing.T) {
		ms := base().Obj()
		ms.Spec.Resources.Memory = ptr.To(resource.MustParse("64Gi"))
		ms.Spec.Weights = &v1.WeightsSpec{SharedMemory: ptr.To(resource.MustParse("16Gi"))}
		ms.Spec.Readiness.StartupTimeout = &metav1.Duration{Duration: 45 * time.Minute}
		pod, err := PodTemplate(TemplateInput{Name: "qwen", Revision: "qwen-abc", Spec: ms.Spec}, Leader)
		if err != nil {
			t.Fatal(err)
		}
		c := pod.Spec.Containers[0]
		gpu := resource.MustParse("2")
		if q := c.Resources.Requests[GPUResource]; q.Cmp(gpu) != 0 {
			t.Errorf("GPU request = %s, want 2", q.String())
		}
		if q := c.Resources.Limits[GPUResource]; q.Cmp(gpu) != 0 {
			t.Errorf("GPU limit = %s, want 2", q.String())
		}
		shm := pod.Spec.Volumes[0]
		if shm.EmptyDir == nil || shm.EmptyDir.Medium != corev1.StorageMediumMemory || shm.EmptyDir.SizeLimit.String() != "16Gi" {
			t.Errorf("shm volume = %+v, want a 16Gi in-memory emptyDir", shm)
		}
		if c.StartupProbe == nil || c.StartupProbe.FailureThreshold*c.StartupProbe.PeriodSeconds != 45*60 {
			t.Errorf("startup probe = %+v, want 45m of failures", c.StartupProbe)
		}
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/health" {
			t.Errorf("readiness probe = %+v, want GET /health", c.ReadinessProbe)
		}
		if pod.Labels[v1.LabelRevision] != "qwen-abc" || pod.Labels[v1.LabelName] != "qwen" {
			t.Errorf("labels = %v", pod.Labels)
		}
	})
	t.Run("workers have no HTTP probes: only the leader serves", func(t *testing.T) {
		pod, err := PodTemplate(TemplateInput{Name: "qwen", Revision: "r", Spec: base().Obj().Spec}, Worker)
		if err != nil {
			t.Fatal(err)
		}
		if c := pod.Spec.Containers[0]; c.ReadinessProbe != nil || c.StartupProbe != nil || len(c.Ports) != 0 {
			t.Errorf("worker container has probes or ports: %+v", c)
		}
	})
	t.Run("weights from a PVC are mounted read-only and served under the model's name", func(t *testing.T) {
		ms := base().Obj()
		ms.Spec.Weights = &v1.WeightsSpec{Source: "pvc://model-cache/qwen3"}
		pod, err := PodTemplate(TemplateInput{Name: "qwen", Revision: "r", Spec: ms.Spec}, Leader)
		if err != nil {
			t.Fatal(err)
		}
		var claim string
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				claim = v.PersistentVolumeClaim.ClaimName
			}
		}
		if claim != "model-cache" {
			t.Errorf("claim = %q, want model-cache", claim)
		}
		script := pod.Spec.Containers[0].Command[2]
		if !strings.Contains(script, "--served-model-name Qwen/Qwen3-0.6B") {
			t.Errorf("script does not name the served model: %s", script)
		}
		if env := pod.Spec.Containers[0].Env[0]; env.Value != "/models/qwen3" {
			t.Errorf("LLM_MODEL = %q, want /models/qwen3", env.Value)
		}
	})
	t.Run("weights from Hugging Face are fetched by an init container", func(t *testing.T) {
		ms := fixtures.Serving("qwen", "ns").Obj()
		ms.Spec.Weights = &v1.WeightsSpec{Source: "hf://Qwen/Qwen3-0.6B"}
		pod, err := PodTemplate(TemplateInput{Name: "qwen", Revision: "r", Spec: ms.Spec}, Leader)
		if err != nil {
			t.Fatal(err)
		}
		if len(pod.Spec.InitContainers) != 1 || pod.Spec.InitContainers[0].Name != "fetch-weights" {
			t.Fatalf("init containers = %+v", pod.Spec.InitContainers)
		}
		if diff := cmp.Diff([]string{"hf", "download", "Qwen/Qwen3-0.6B", "--local-dir", "/models/Qwen/Qwen3-0.6B"}, pod.Spec.InitContainers[0].Command); diff != "" {
			t.Errorf("fetch command (-want +got):\n%s", diff)
		}
	})
	t.Run("the template overlay merges last, containers by name", func(t *testing.T) {
		ms := base().Obj()
		ms.Spec.Template = fixtures.RawTemplate(`{"metadata": {"labels": {"team": "search"}},
			"spec": {"containers": [{"name": "engine", "env": [{"name": "HF_HUB_OFFLINE", "value": "1"}]}], "serviceAccountName": "inference"}}`)
		pod, err := PodTemplate(TemplateInput{Name: "qwen", Revision: "r", Spec: ms.Spec, Overlay: fixtures.RevisionSpec(t, ms.Spec).Template}, Leader)
		if err != nil {
			t.Fatal(err)
		}
		if len(pod.Spec.Containers) != 1 {
			t.Fatalf("containers = %d, want the engine container merged, not a second one", len(pod.Spec.Containers))
		}
		c := pod.Spec.Containers[0]
		names := []string{}
		for _, e := range c.Env {
			names = append(names, e.Name)
		}
		if diff := cmp.Diff([]string{"LLM_MODEL", "LLM_PORT", "HF_HUB_OFFLINE"}, names, sortStrings()); diff != "" {
			t.Errorf("env (-want +got):\n%s", diff)
		}
		if c.Image != naming.DefaultVLLMImage || pod.Spec.ServiceAccountName != "inference" || pod.Labels["team"] != "search" {
			t.Errorf("overlay lost the generated image or did not apply: image %q sa %q labels %v", c.Image, pod.Spec.ServiceAccountName, pod.Labels)
		}
	})
	t.Run("the overlay may not take the operator's labels", func(t *testing.T) {
		ms := base().Obj()
		ms.Spec.Template = fixtures.RawTemplate(`{"metadata": {"labels": {"serving.kubectl-llm.dev/name": "other"}}}`)
		_, err := PodTemplate(TemplateInput{Name: "qwen", Revision: "r", Spec: ms.Spec, Overlay: fixtures.RevisionSpec(t, ms.Spec).Template}, Leader)
		if err == nil || !strings.Contains(err.Error(), "spec.template.metadata.labels[serving.kubectl-llm.dev/name]") {
			t.Fatalf("err = %v, want a refusal naming the label", err)
		}
	})
}

func sortStrings() cmp.Option {
	return cmp.Transformer("sort", func(in []string) []string {
		out := append([]string(nil), in...)
		for i := range out {
			for j := i + 1; j < len(out); j++ {
				if out[j] < out[i] {
					out[i], out[j] = out[j], out[i]
				}
			}
		}
		return out
	})
}

func TestParseWeightsSourceRefusesWhatItCannotServe(t *testing.T) {
	for src, want := range map[string]string{
		"pvc:///qwen": "name the PersistentVolumeClaim",
		"hf://qwen":   "name the Hugging Face repository",
		"s3:///x":     "name the bucket",
	} {
		if _, err := ParseWeightsSource(src); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "spec.weights.source") {
			t.Errorf("%s: err = %v, want spec.weights.source … %s", src, err, want)
		}
	}
}

func TestDesiredLeaderWorkerSet(t *testing.T) {
	ms := fixtures.Serving("qwen", "ns").GPUs(8).GroupSize(2).Replicas(4).Partition(2).
		Surge(intstr.FromInt32(1), intstr.FromInt32(0)).Restart("r-1").Obj()
	ms.UID = "uid-1"
	ms.Spec.Scheduling.ExclusiveTopology = "topology.kubernetes.io/zone"
	ms.Spec.RestartPolicy = v1.RestartPolicyNone
	lws, err := DesiredLeaderWorkerSet(LWSInput{Serving: ms, Revision: "qwen-abc", RevisionSpec: fixtures.RevisionSpec(t, ms.Spec), Replicas: 4})
	if err != nil {
		t.Fatal(err)
	}
	s := lws.Spec
	got := map[string]any{
		"replicas":       *s.Replicas,
		"size":           *s.LeaderWorkerTemplate.Size,
		"restartPolicy":  *s.LeaderWorkerTemplate.RestartPolicy,
		"partition":      *s.RolloutStrategy.RollingUpdateConfiguration.Partition,
		"maxSurge":       s.RolloutStrategy.RollingUpdateConfiguration.MaxSurge.String(),
		"maxUnavailable": s.RolloutStrategy.RollingUpdateConfiguration.MaxUnavailable.String(),
		"subdomain":      *s.NetworkConfig.SubdomainPolicy,
		"owner":          string(*lws.OwnerReferences[0].UID),
		"controller":     *lws.OwnerReferences[0].Controller,
		"exclusive":      lws.Annotations[lwsv1.ExclusiveKeyAnnotationKey],
		"restartID":      s.LeaderWorkerTemplate.LeaderTemplate.Annotations[v1.AnnotationRestartID],
		"workerRestart":  s.LeaderWorkerTemplate.WorkerTemplate.Annotations[v1.AnnotationRestartID],
		"revision":       s.LeaderWorkerTemplate.WorkerTemplate.Labels[v1.LabelRevision],
	}
	want := map[string]any{
		"replicas": int32(4), "size": int32(2), "restartPolicy": lwsv1.NoneRestartPolicy, "partition": int32(2),
		"maxSurge": "1", "maxUnavailable": "0", "subdomain": lwsv1.SubdomainShared, "owner": "uid-1", "controller": true,
		"exclusive": "topology.kubernetes.io/zone", "restartID": "r-1", "workerRestart": "r-1", "revision": "qwen-abc",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LeaderWorkerSet (-want +got):\n%s", diff)
	}

	single, err := DesiredLeaderWorkerSet(LWSInput{Serving: fixtures.Serving("one", "ns").Obj(), Revision: "one-x", RevisionSpec: fixtures.RevisionSpec(t, fixtures.Serving("one", "ns").Obj().Spec), Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	if single.Spec.LeaderWorkerTemplate.LeaderTemplate != nil || single.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0].ReadinessProbe == nil {
		t.Error("a group of one must be its leader: the worker template carries the leader's probes and there is no separate leader template")
	}
}

func TestIntentHashChangesOnlyWithTheIntent(t *testing.T) {
	ms := fixtures.Serving("qwen", "ns").Obj()
	build := func(ms *v1.ModelServing) string {
		lws, err := DesiredLeaderWorkerSet(LWSInput{Serving: ms, Revision: "r", RevisionSpec: fixtures.RevisionSpec(t, ms.Spec), Replicas: 1})
		if err != nil {
			t.Fatal(err)
		}
		return IntentHash(lws)
	}
	a, b := build(ms), build(ms.DeepCopy())
	if a != b {
		t.Fatalf("the same serving hashed %s then %s", a, b)
	}
	ms.Spec.Engine.Image = "vllm/vllm-openai:v0.12.0"
	if build(ms) == a {
		t.Fatal("a new image did not change the intent hash")
	}
}

func TestPlanRollout(t *testing.T) {
	cases := []struct {
		name string
		in   PlanInput
		want Plan
	}{
		{"first apply", PlanInput{Strategy: v1.RollingUpdate, Desired: 3, UpdateRevision: "b"}, Plan{"b", 3, ""}},
		{"rolling update hands LWS the new template", PlanInput{Strategy: v1.RollingUpdate, Desired: 3, UpdateRevision: "b", LWSRevision: "a", ExistingGroups: 3}, Plan{"b", 3, ""}},
		{"paused keeps the running template but scales", PlanInput{Strategy: v1.RollingUpdate, Paused: true, Desired: 5, UpdateRevision: "b", LWSRevision: "a", ExistingGroups: 3}, Plan{"a", 5, "rollout paused"}},
		{"paused with nothing new changes nothing", PlanInput{Strategy: v1.RollingUpdate, Paused: true, Desired: 3, UpdateRevision: "a", LWSRevision: "a", ExistingGroups: 3}, Plan{"a", 3, ""}},
		{"recreate stops the old groups first", PlanInput{Strategy: v1.Recreate, Desired: 3, UpdateRevision: "b", LWSRevision: "a", ExistingGroups: 2}, Plan{"a", 0, "Recreate: waiting for the old groups to stop"}},
		{"recreate starts the new revision once none is left", PlanInput{Strategy: v1.Recreate, Desired: 3, UpdateRevision: "b", LWSRevision: "a", ExistingGroups: 0}, Plan{"b", 3, ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PlanRollout(tc.in)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}
