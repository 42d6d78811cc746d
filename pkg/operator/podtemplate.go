package operator

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
)

// Images and names of the pod template (the engine images and container name are in pkg/naming).
const (
	// FetchImageS3 copies s3:// weights; hf:// weights are fetched with the engine image itself.
	FetchImageS3 = "amazon/aws-cli:2.31.0"

	// ModelsMountPath is where weights from spec.weights are mounted.
	ModelsMountPath = "/models"
	// RayPort is the Ray head port a multi-node vLLM group uses.
	RayPort = 6379
	// SGLangDistPort is the port of SGLang's distributed init on the leader.
	SGLangDistPort = 20000
	// GPUResource is the extended resource GPUs are requested as.
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
)

// Role is the place of a pod in its group.
type Role string

const (
	Leader Role = "leader"
	Worker Role = "worker"
)

// Parallelism is how a model is split over the GPUs of a group.
type Parallelism struct {
	Tensor   int32 // GPUs per pod (tensor parallel within a node)
	Pipeline int32 // pods per group (pipeline parallel across nodes)
}

// ParallelismFor derives tensor and pipeline parallel sizes from gpus per pod and group size.
func ParallelismFor(spec v1.ModelServingSpec) Parallelism {
	tp := int32(1)
	if spec.Resources.GPUs != nil && *spec.Resources.GPUs > 1 {
		tp = *spec.Resources.GPUs
	}
	return Parallelism{Tensor: tp, Pipeline: max(spec.GroupSize, 1)}
}

// EngineCommand is the command and arguments of the engine container for a role.
func EngineCommand(spec v1.ModelServingSpec, role Role) (command, args []string) {
	par := ParallelismFor(spec)
	port := strconv.Itoa(int(spec.Engine.Port))
	model := kubeEscape(servedModelPath(spec))
	var nameArgs []string
	if servedModelPath(spec) != spec.Model {
		nameArgs = []string{"--served-model-name", kubeEscape(spec.Model)}
	}
	switch spec.Engine.Type {
	case v1.EngineCustom:
		return nil, append([]string{}, spec.Engine.Args...)
	case v1.EngineSGLang:
		// Every rank runs the same launcher; rank 0 (the leader) serves HTTP.
		args = []string{"--model-path", model, "--host", "0.0.0.0", "--port", port,
			"--tp-size", strconv.Itoa(int(par.Tensor * par.Pipeline))}
		if par.Pipeline > 1 {
			args = append(args, "--dist-init-addr", "$(LWS_LEADER_ADDRESS):"+strconv.Itoa(SGLangDistPort),
				"--nnodes", "$(LWS_GROUP_SIZE)", "--node-rank", "$(LWS_WORKER_INDEX)")
		}
		args = append(append(args, nameArgs...), spec.Engine.Args...)
		return []string{"python3", "-m", "sglang.launch_server"}, args
	default: // vLLM
		serve := []string{"--host", "0.0.0.0", "--port", port, "--tensor-parallel-size", strconv.Itoa(int(par.Tensor))}
		if par.Pipeline == 1 {
			return []string{"vllm", "serve", model}, append(append(serve, nameArgs...), spec.Engine.Args...)
		}
		// Multi-node vLLM runs on a Ray cluster: workers join the leader's head, the leader waits
		// for the whole group and then serves with pipeline parallelism across the nodes.
		if role == Worker {
			script := fmt.Sprintf("exec ray start --address=$LWS_LEADER_ADDRESS:%d --block", RayPort)
			return []string{"/bin/sh", "-c", script}, nil
		}
		serve = append(serve, "--pipeline-parallel-size", strconv.Itoa(int(par.Pipeline)), "--distributed-executor-backend", "ray")
		serve = append(serve, nameArgs...)
		script := fmt.Sprintf("ray start --head --port=%d && "+
			"until [ \"$(ray list nodes --format=json 2>/dev/null | grep -c '\"state\": \"ALIVE\"')\" -ge \"$LWS_GROUP_SIZE\" ]; do echo waiting for $LWS_GROUP_SIZE ray nodes; sleep 5; done && "+
			"exec vllm serve \"$LLM_MODEL\" %s \"$@\"", RayPort, shellJoin(serve))
		return []string{"/bin/sh", "-c", script, "vllm"}, append([]string{}, spec.Engine.Args...)
	}
}

// servedModelPath is the model argument of the engine: the model name, or its path in the
// weights volume when weights come from a volume or are fetched.
func servedModelPath(spec v1.ModelServingSpec) string {
	if spec.Weights == nil || spec.Weights.Source == "" {
		return spec.Model
	}
	src, err := ParseWeightsSource(spec.Weights.Source)
	if err != nil {
		return spec.Model
	}
	return src.MountedPath
}

// WeightsSource is a parsed spec.weights.source.
type WeightsSource struct {
	Scheme      string // pvc, hf or s3
	Claim       string // pvc: the claim name
	Path        string // pvc: path inside the claim; hf: repo; s3: bucket/key prefix
	MountedPath string // where the engine finds the weights
}

// ParseWeightsSource parses pvc://claim/path, hf://org/repo and s3://bucket/prefix.
func ParseWeightsSource(source string) (WeightsSource, error) {
	fld := field.NewPath("spec", "weights", "source")
	u, err := url.Parse(source)
	if err != nil {
		return WeightsSource{}, field.Invalid(fld, source, "not a URL: "+err.Error())
	}
	rest := strings.Trim(u.Host+u.Path, "/")
	if strings.HasPrefix(rest, "-") {
		// It becomes an argument of the fetch command, which would read it as an option.
		return WeightsSource{}, field.Invalid(fld, source, "must not start its claim, repository or bucket with '-'")
	}
	switch u.Scheme {
	case "pvc":
		if u.Host == "" {
			return WeightsSource{}, field.Invalid(fld, source, "name the PersistentVolumeClaim: pvc://<claim>/<path>")
		}
		p := strings.Trim(u.Path, "/")
		return WeightsSource{Scheme: "pvc", Claim: u.Host, Path: p, MountedPath: strings.TrimSuffix(ModelsMountPath+"/"+p, "/")}, nil
	case "hf":
		if !strings.Contains(rest, "/") {
			return WeightsSource{}, field.Invalid(fld, source, "name the Hugging Face repository: hf://<org>/<repo>")
		}
		return WeightsSource{Scheme: "hf", Path: rest, MountedPath: ModelsMountPath + "/" + rest}, nil
	case "s3":
		if u.Host == "" {
			return WeightsSource{}, field.Invalid(fld, source, "name the bucket: s3://<bucket>/<prefix>")
		}
		return WeightsSource{Scheme: "s3", Path: rest, MountedPath: ModelsMountPath + "/" + rest}, nil
	}
	return WeightsSource{}, field.NotSupported(fld, u.Scheme, []string{"pvc", "hf", "s3"})
}

// TemplateInput is what one pod template is built from.
type TemplateInput struct {
	Name     string // the serving's name
	Revision string // the ModelServing revision the template belongs to
	Spec     v1.ModelServingSpec
	// Overlay is spec.template, decoded (v1.DecodeTemplate); nil when there is none.
	Overlay   *corev1.PodTemplateSpec
	RestartID string
	// Annotations copied to the pods (e.g. the simulated load delay).
	Annotations map[string]string
}

// PodTemplate builds the pod template of one role, with spec.template merged last.
// It returns a field error when the spec cannot be turned into pods (a terminal error).
func PodTemplate(in TemplateInput, role Role) (corev1.PodTemplateSpec, error) {
	spec := in.Spec
	command, args := EngineCommand(spec, role)
	c := corev1.Container{
		Name:      naming.EngineContainer,
		Image:     naming.EngineImage(spec.Engine),
		Command:   command,
		Args:      args,
		Env:       engineEnv(spec),
		Resources: podResources(spec.Resources),
		VolumeMounts: []corev1.VolumeMount{
			{Name: "dshm", MountPath: "/dev/shm"},
		},
	}
	if role == Leader || spec.Engine.Type == v1.EngineCustom {
		c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: spec.Engine.Port, Protocol: corev1.ProtocolTCP}}
	}
	if role == Leader {
		c.StartupProbe, c.ReadinessProbe = probes(spec)
	}
	shm := corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}
	if spec.Weights != nil && spec.Weights.SharedMemory != nil {
		shm.SizeLimit = ptrTo(spec.Weights.SharedMemory.DeepCopy())
	}
	pod := corev1.PodTemplateSpec{}
	pod.Labels = map[string]string{
		v1.LabelName:      in.Name,
		v1.LabelRevision:  in.Revision,
		v1.LabelManagedBy: v1.ManagedByValue,
	}
	if len(in.Annotations) > 0 || in.RestartID != "" {
		pod.Annotations = map[string]string{}
		for k, v := range in.Annotations {
			pod.Annotations[k] = v
		}
		if in.RestartID != "" {
			pod.Annotations[v1.AnnotationRestartID] = in.RestartID
		}
	}
	pod.Spec.Volumes = []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &shm}}}
	if spec.Weights != nil && spec.Weights.Source != "" {
		src, err := ParseWeightsSource(spec.Weights.Source)
		if err != nil {
			return corev1.PodTemplateSpec{}, err
		}
		addWeights(&pod.Spec, &c, src, spec.Engine)
	}
	pod.Spec.Containers = []corev1.Container{c}
	s := spec.Scheduling
	pod.Spec.SchedulerName = s.SchedulerName
	pod.Spec.PriorityClassName = s.PriorityClassName
	if len(s.NodeSelector) > 0 {
		pod.Spec.NodeSelector = map[string]string{}
		for k, v := range s.NodeSelector {
			pod.Spec.NodeSelector[k] = v
		}
	}
	pod.Spec.Tolerations = append([]corev1.Toleration(nil), s.Tolerations...)
	if in.Overlay == nil {
		return pod, nil
	}
	return mergeOverlay(pod, *in.Overlay)
}

func engineEnv(spec v1.ModelServingSpec) []corev1.EnvVar {
	env := []corev1.EnvVar{
		{Name: "LLM_MODEL", Value: kubeEscape(servedModelPath(spec))},
		{Name: "LLM_PORT", Value: strconv.Itoa(int(spec.Engine.Port))},
	}
	return append(env, spec.Engine.Env...)
}

func podResources(r v1.ResourceSpec) corev1.ResourceRequirements {
	req := corev1.ResourceList{}
	lim := corev1.ResourceList{}
	if r.GPUs != nil && *r.GPUs > 0 {
		q := *resource.NewQuantity(int64(*r.GPUs), resource.DecimalSI)
		req[GPUResource], lim[GPUResource] = q, q.DeepCopy()
	}
	if r.CPU != nil {
		req[corev1.ResourceCPU] = r.CPU.DeepCopy()
	}
	if r.Memory != nil {
		req[corev1.ResourceMemory] = r.Memory.DeepCopy()
		lim[corev1.ResourceMemory] = r.Memory.DeepCopy()
	}
	out := corev1.ResourceRequirements{}
	if len(req) > 0 {
		out.Requests = req
	}
	if len(lim) > 0 {
		out.Limits = lim
	}
	return out
}

// ProbePeriod is the period of the startup and readiness probes.
const ProbePeriod = 10

func probes(spec v1.ModelServingSpec) (startup, readiness *corev1.Probe) {
	get := func() corev1.ProbeHandler {
		return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: spec.Readiness.Path, Port: intstr.FromString("http")}}
	}
	timeout := int32(20 * 60)
	if spec.Readiness.StartupTimeout != nil {
		timeout = int32(spec.Readiness.StartupTimeout.Seconds())
	}
	failures := (timeout + ProbePeriod - 1) / ProbePeriod
	startup = &corev1.Probe{ProbeHandler: get(), PeriodSeconds: ProbePeriod, FailureThreshold: max(failures, 1)}
	readiness = &corev1.Probe{ProbeHandler: get(), PeriodSeconds: ProbePeriod, FailureThreshold: 3}
	return startup, readiness
}

func addWeights(pod *corev1.PodSpec, engine *corev1.Container, src WeightsSource, e v1.EngineSpec) {
	const volume = "models"
	mount := corev1.VolumeMount{Name: volume, MountPath: ModelsMountPath}
	switch src.Scheme {
	case "pvc":
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: src.Claim, ReadOnly: true}}})
		mount.ReadOnly = true
	default:
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		fetch := corev1.Container{Name: "fetch-weights", VolumeMounts: []corev1.VolumeMount{mount}}
		if src.Scheme == "hf" {
			fetch.Image = naming.EngineImage(e)
			fetch.Command = []string{"hf", "download", src.Path, "--local-dir", src.MountedPath}
		} else {
			fetch.Image = FetchImageS3
			fetch.Command = []string{"aws", "s3", "sync", "s3://" + src.Path, src.MountedPath}
		}
		pod.InitContainers = append(pod.InitContainers, fetch)
	}
	engine.VolumeMounts = append(engine.VolumeMounts, mount)
}

// mergeOverlay applies spec.template over the generated template as a strategic merge patch
// (containers merge by name, so {name: engine, env: [...]} adds to the engine container).
func mergeOverlay(pod, overlay corev1.PodTemplateSpec) (corev1.PodTemplateSpec, error) {
	fld := field.NewPath("spec", "template")
	base, err := json.Marshal(pod)
	if err != nil {
		return pod, err
	}
	patch, err := overlayPatch(overlay)
	if err != nil {
		return pod, err
	}
	merged, err := strategicpatch.StrategicMergePatch(base, patch, corev1.PodTemplateSpec{})
	if err != nil {
		return pod, field.Invalid(fld, "<pod template>", "cannot merge over the generated pod template: "+err.Error())
	}
	var out corev1.PodTemplateSpec
	if err := json.Unmarshal(merged, &out); err != nil {
		return pod, field.Invalid(fld, "<pod template>", err.Error())
	}
	// The overlay may add labels but must keep the ones the operator selects on.
	for _, k := range []string{v1.LabelName, v1.LabelRevision} {
		if out.Labels[k] != pod.Labels[k] {
			return pod, field.Forbidden(fld.Child("metadata", "labels").Key(k), "is set by the operator; remove it from spec.template")
		}
	}
	for k := range out.Labels {
		if strings.HasPrefix(k, "leaderworkerset.sigs.k8s.io/") {
			return pod, field.Forbidden(fld.Child("metadata", "labels").Key(k), "is set by LeaderWorkerSet; remove it from spec.template")
		}
	}
	return out, nil
}

// overlayPatch is the overlay as a strategic merge patch. A typed pod spec always has a
// containers field (it has no omitempty), and a null in a patch deletes: an overlay that sets
// no container (only labels, say) must leave the generated containers alone.
func overlayPatch(overlay corev1.PodTemplateSpec) ([]byte, error) {
	raw, err := json.Marshal(overlay)
	if err != nil || overlay.Spec.Containers != nil {
		return raw, err
	}
	var patch map[string]any
	if err := json.Unmarshal(raw, &patch); err != nil {
		return nil, err
	}
	if spec, ok := patch["spec"].(map[string]any); ok {
		delete(spec, "containers")
	}
	return json.Marshal(patch)
}

// shellJoin joins words for a /bin/sh script, each word quoted unless it is made only of
// characters the shell takes literally, so a spec value (the served model name) is always one
// word and never shell syntax. Safe words stay as they are, which keeps existing templates.
func shellJoin(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = shellQuote(w)
	}
	return strings.Join(out, " ")
}

func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+=,-") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// kubeEscape escapes a spec value for a container's command, args or env value, where the
// kubelet expands $(VAR) references: $$ stands for a literal $.
func kubeEscape(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// groupLabelSelector selects the leader pods of a serving (the Service's selector).
func leaderSelector(name string) map[string]string {
	return map[string]string{v1.LabelName: name, lwsv1.WorkerIndexLabelKey: "0"}
}

func ptrTo[T any](v T) *T { return &v }
