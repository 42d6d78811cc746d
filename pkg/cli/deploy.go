package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsjson "sigs.k8s.io/json"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// DeployOptions build a ModelServing from flags (or a file) and server-side apply it.
type DeployOptions struct {
	*RootOptions
	servingTarget

	File           string
	Model          string
	Engine         string
	Image          string
	Args           []string
	Env            []string
	Port           int32
	GPUs           int32
	CPU            string
	Memory         string
	GroupSize      int32
	Replicas       int32
	Strategy       string
	MaxSurge       string
	MaxUnavailable string
	Partition      int32
	Weights        string
	SharedMemory   string
	StartupTimeout time.Duration
	Deadline       time.Duration
	DryRun         string
	output         *outputFlags
	Preflight      bool

	set func(flag string) bool // whether a flag was given
}

// specFlags are the flags that build the spec; they cannot be mixed with -f.
var specFlags = []string{"model", "engine", "image", "arg", "env", "port", "gpus", "cpu", "memory", "group-size", "replicas",
	"strategy", "max-surge", "max-unavailable", "partition", "weights", "shared-memory", "startup-timeout", "progress-deadline"}

func newDeployCommand(root *RootOptions) *cobra.Command {
	o := &DeployOptions{RootOptions: root}
	cmd := &cobra.Command{
		Use:   "deploy NAME --model MODEL [flags] | deploy [NAME] -f FILE",
		Short: "Create or update a model serving (server-side apply)",
		Long: `Build a ModelServing from flags, or read one from a file, and server-side apply it with the field
manager kubectl-llm. Only the fields you give are applied and owned: the API server fills the
defaults, and fields owned by others (an autoscaler's replicas, say) are left alone unless given.
Like kubectl apply, a field you gave before and leave out now is given up and goes back to its
default: repeat the whole set of flags (or keep them in a file), or use set image / scale to
change one thing.

--dry-run=client prints what would be applied without contacting the cluster's storage;
--dry-run=server asks the API server to default and validate it without writing.
--preflight refuses to deploy when the cluster's spare GPUs cannot hold the groups.`,
		Example: `  # one single-node group of Qwen on vLLM with 1 GPU
  kubectl llm deploy qwen --model Qwen/Qwen3-0.6B --gpus 1

  # two groups of 2 pods with 8 GPUs each, rolling with one spare group
  kubectl llm deploy big --model deepseek-ai/DeepSeek-R1 --gpus 8 --group-size 2 --replicas 2 --max-surge 1 --max-unavailable 0

  # render for GitOps
  kubectl llm deploy qwen --model Qwen/Qwen3-0.6B --dry-run=client -o yaml

  # from a manifest
  kubectl llm deploy -f qwen.yaml`,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
	f := cmd.Flags()
	f.StringVarP(&o.File, "filename", "f", "", "A ModelServing manifest to apply (- for stdin)")
	f.StringVar(&o.Model, "model", "", "The model the engine serves, e.g. Qwen/Qwen3-0.6B (required without -f)")
	f.StringVar(&o.Engine, "engine", "", "Inference engine: vllm, sglang or custom (default vllm)")
	f.StringVar(&o.Image, "image", "", "Engine image (default: the operator's image for the engine; required for custom)")
	f.StringArrayVar(&o.Args, "arg", nil, "An argument appended to the engine's command line (repeatable)")
	f.StringArrayVar(&o.Env, "env", nil, "KEY=VALUE added to the engine container (repeatable)")
	f.Int32Var(&o.Port, "port", 0, "Port the engine serves on (default 8000)")
	f.Int32Var(&o.GPUs, "gpus", 0, "nvidia.com/gpu per pod, requested and limited alike")
	f.StringVar(&o.CPU, "cpu", "", "CPU per pod, e.g. 8")
	f.StringVar(&o.Memory, "memory", "", "Memory per pod, e.g. 64Gi")
	f.Int32Var(&o.GroupSize, "group-size", 0, "Pods per group: 1 leader + workers (default 1)")
	f.Int32Var(&o.Replicas, "replicas", 0, "Number of groups (default 1)")
	f.StringVar(&o.Strategy, "strategy", "", "Rollout strategy: RollingUpdate or Recreate")
	f.StringVar(&o.MaxSurge, "max-surge", "", "Groups above replicas during a rollout: a number or a percentage (default 0)")
	f.StringVar(&o.MaxUnavailable, "max-unavailable", "", "Groups that may be unavailable during a rollout: a number or a percentage (default 1)")
	f.Int32Var(&o.Partition, "partition", 0, "Only groups with an index >= partition get a new revision (canary)")
	f.StringVar(&o.Weights, "weights", "", "Where the weights come from: pvc://CLAIM/PATH, hf://REPO or s3://BUCKET/PATH")
	f.StringVar(&o.SharedMemory, "shared-memory", "", "Size of /dev/shm, e.g. 16Gi")
	f.DurationVar(&o.StartupTimeout, "startup-timeout", 0, "How long a pod may take to load its weights (default 20m)")
	f.DurationVar(&o.Deadline, "progress-deadline", 0, "How long a rollout may make no progress before it is reported failed (default 30m)")
	f.StringVar(&o.DryRun, "dry-run", "none", `"none", "client" (print what would be applied) or "server" (validate and default on the API server, write nothing)`)
	f.Lookup("dry-run").NoOptDefVal = "client"
	o.output = newOutputFlags("")
	o.output.addFlags(cmd, "Print the applied serving: yaml, json or name (a client dry run prints yaml)")
	f.BoolVar(&o.Preflight, "preflight", false, "Refuse to deploy when the spare GPUs of the cluster cannot hold the groups")
	_ = cmd.RegisterFlagCompletionFunc("engine", cobra.FixedCompletions([]cobra.Completion{"vllm", "sglang", "custom"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("strategy", cobra.FixedCompletions([]cobra.Completion{"RollingUpdate", "Recreate"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("dry-run", cobra.FixedCompletions([]cobra.Completion{"none", "client", "server"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Complete reads the NAME argument and resolves the client and namespace.
func (o *DeployOptions) Complete(cmd *cobra.Command, args []string) error {
	o.set = cmd.Flags().Changed
	if o.DryRun == "client" && o.Client == nil {
		// A client dry run needs no cluster: only the namespace.
		o.args = args
		if len(args) > 0 {
			o.Name = args[0]
		}
		ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
		o.namespace = ns
		return err
	}
	return o.complete(o.RootOptions, args)
}

// Validate checks the flags, naming the flag that is wrong.
func (o *DeployOptions) Validate() error {
	if len(o.args) > 1 {
		return fmt.Errorf("expected one NAME, got %d arguments (%s): kubectl llm deploy NAME --model MODEL", len(o.args), strings.Join(o.args, " "))
	}
	if o.File != "" {
		for _, f := range specFlags {
			if o.set(f) {
				return fmt.Errorf("--%s cannot be combined with -f: put it in the file, or deploy from flags only", f)
			}
		}
	} else {
		if o.Name == "" {
			return fmt.Errorf("NAME is required: kubectl llm deploy NAME --model MODEL")
		}
		if strings.TrimSpace(o.Model) == "" {
			return fmt.Errorf("--model is required: the model the engine serves, e.g. --model Qwen/Qwen3-0.6B")
		}
	}
	if o.Name != "" {
		if errs := validation.IsDNS1123Subdomain(o.Name); len(errs) > 0 {
			return fmt.Errorf("NAME %q is not a valid object name: %s", o.Name, strings.Join(errs, "; "))
		}
	}
	switch o.Engine {
	case "", string(v1.EngineVLLM), string(v1.EngineSGLang):
	case string(v1.EngineCustom):
		if o.Image == "" {
			return fmt.Errorf("--image is required with --engine custom: a custom engine has no default image")
		}
	default:
		return fmt.Errorf("--engine must be vllm, sglang or custom, not %q", o.Engine)
	}
	if o.set("gpus") && o.GPUs < 0 {
		return fmt.Errorf("--gpus must be 0 or more GPUs per pod, not %d", o.GPUs)
	}
	if o.set("group-size") && (o.GroupSize < 1 || o.GroupSize > 64) {
		return fmt.Errorf("--group-size must be between 1 and 64 pods per group, not %d", o.GroupSize)
	}
	if o.set("replicas") && (o.Replicas < 0 || o.Replicas > 1000) {
		return fmt.Errorf("--replicas must be between 0 and 1000 groups, not %d", o.Replicas)
	}
	if o.set("port") && (o.Port < 1 || o.Port > 65535) {
		return fmt.Errorf("--port must be between 1 and 65535, not %d", o.Port)
	}
	if o.set("partition") && o.Partition < 0 {
		return fmt.Errorf("--partition must be 0 or more, not %d", o.Partition)
	}
	switch v1.RolloutStrategyType(o.Strategy) {
	case "", v1.RollingUpdate, v1.Recreate:
	default:
		return fmt.Errorf("--strategy must be RollingUpdate or Recreate, not %q", o.Strategy)
	}
	surgeZero, unavailZero := false, false
	for _, f := range []struct {
		name, val string
		zero      *bool
	}{{"max-surge", o.MaxSurge, &surgeZero}, {"max-unavailable", o.MaxUnavailable, &unavailZero}} {
		if !o.set(f.name) {
			continue
		}
		v, err := parseGroups(f.val)
		if err != nil {
			return fmt.Errorf("--%s must be a number of groups or a percentage such as 25%%, not %q", f.name, f.val)
		}
		*f.zero = v.String() == "0" || v.String() == "0%"
	}
	if o.set("max-surge") && o.set("max-unavailable") && surgeZero && unavailZero {
		return fmt.Errorf("--max-surge and --max-unavailable cannot both be 0: use --max-unavailable 1 (no spare GPUs) or --max-surge 1 (one spare group)")
	}
	if o.Strategy == string(v1.Recreate) && o.set("max-surge") && !surgeZero {
		return fmt.Errorf("--max-surge must be 0 with --strategy Recreate, which stops the old groups before starting new ones")
	}
	for _, q := range []struct{ name, val string }{{"cpu", o.CPU}, {"memory", o.Memory}, {"shared-memory", o.SharedMemory}} {
		if q.val == "" {
			continue
		}
		if _, err := resource.ParseQuantity(q.val); err != nil {
			return fmt.Errorf("--%s must be a quantity such as 8 or 64Gi, not %q", q.name, q.val)
		}
	}
	if o.Weights != "" && !(strings.HasPrefix(o.Weights, "pvc://") || strings.HasPrefix(o.Weights, "hf://") || strings.HasPrefix(o.Weights, "s3://")) {
		return fmt.Errorf("--weights must start with pvc://, hf:// or s3://, not %q", o.Weights)
	}
	if o.set("startup-timeout") && o.StartupTimeout <= 0 {
		return fmt.Errorf("--startup-timeout must be a positive duration such as 20m, not %s", o.StartupTimeout)
	}
	if o.set("progress-deadline") && o.Deadline <= 0 {
		return fmt.Errorf("--progress-deadline must be a positive duration such as 30m, not %s", o.Deadline)
	}
	for _, e := range o.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("--env must be KEY=VALUE, not %q", e)
		}
	}
	switch o.DryRun {
	case "none", "client", "server":
	default:
		return fmt.Errorf(`--dry-run must be "none", "client" or "server", not %q`, o.DryRun)
	}
	if o.DryRun == "client" && o.output.format() == "" {
		o.output.setFormat("yaml") // a client dry run is for its render
	}
	return o.output.validate()
}

func parseGroups(s string) (intstr.IntOrString, error) {
	v := intstr.Parse(s)
	if v.Type == intstr.String {
		if !strings.HasSuffix(s, "%") {
			return v, fmt.Errorf("not a number or percentage")
		}
		if _, err := intstr.GetScaledValueFromIntOrPercent(&v, 100, false); err != nil {
			return v, err
		}
		if strings.HasPrefix(s, "-") {
			return v, fmt.Errorf("negative")
		}
	} else if v.IntVal < 0 {
		return v, fmt.Errorf("negative")
	}
	return v, nil
}

// Run builds the serving, optionally checks it fits, and applies it.
func (o *DeployOptions) Run(ctx context.Context) error {
	u, err := o.build()
	if err != nil {
		return err
	}
	if o.DryRun == "client" {
		return o.output.printObject(u, o.Streams.Out)
	}
	host := o.host()
	existing := &v1.ModelServing{}
	err = o.client.Get(ctx, client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}, existing)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return explain(err, host)
	}
	if o.Preflight {
		if err := o.preflight(ctx, u, existing, exists); err != nil {
			return err
		}
	}
	opts := []client.ApplyOption{client.FieldOwner(v1.FieldManager), client.ForceOwnership}
	if o.DryRun == "server" {
		opts = append(opts, client.DryRunAll)
	}
	if err := o.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), opts...); err != nil {
		return explain(err, host)
	}
	if o.DryRun == "none" {
		o.warnWithoutLWS(ctx)
	}
	if !o.output.ownFormat() {
		return o.output.printObject(u, o.Streams.Out)
	}
	verb := "created"
	if exists {
		verb = "configured"
		if o.unchanged(existing, u) {
			verb = "unchanged"
		}
	}
	if o.DryRun == "server" {
		verb += " (server dry run)"
	}
	_, err = fmt.Fprintf(o.Streams.Out, "%s %s\n", qualified(u.GetName()), verb)
	return err
}

// unchanged says whether applying changed nothing. A write shows in the resourceVersion; a server
// dry run never moves it, so there the spec, labels and annotations are compared.
func (o *DeployOptions) unchanged(existing *v1.ModelServing, applied *unstructured.Unstructured) bool {
	if o.DryRun != "server" {
		return existing.ResourceVersion == applied.GetResourceVersion()
	}
	after := &v1.ModelServing{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(applied.Object, after); err != nil {
		return false
	}
	return equality.Semantic.DeepEqual(existing.Spec, after.Spec) &&
		equality.Semantic.DeepEqual(existing.Labels, applied.GetLabels()) &&
		equality.Semantic.DeepEqual(existing.Annotations, applied.GetAnnotations())
}

// warnWithoutLWS says, on stderr, when the cluster has no LeaderWorkerSet API: the serving is
// stored, but no group starts until LWS is installed or the operator hosts it.
func (o *DeployOptions) warnWithoutLWS(ctx context.Context) {
	if ch := crdCheck(ctx, o.client, "LeaderWorkerSet API", "leaderworkersets.leaderworkerset.x-k8s.io"); ch.Result == "FAIL" {
		fmt.Fprintln(o.Streams.ErrOut, "Warning: the LeaderWorkerSet API is not installed in this cluster: no group starts until it is"+
			" (install LWS, or run the operator with --lws=embedded)")
	}
}

// preflight checks that the serving's groups fit the spare GPUs: all of them for a new serving,
// the surge for an existing one.
func (o *DeployOptions) preflight(ctx context.Context, u *unstructured.Unstructured, existing *v1.ModelServing, exists bool) error {
	ms := &v1.ModelServing{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ms); err != nil {
		return fmt.Errorf("read the serving to check it: %w", err)
	}
	p := &PreflightOptions{RootOptions: o.RootOptions, servingTarget: servingTarget{client: o.client, namespace: o.namespace}}
	rep, err := p.report(ctx, ms, existing, exists)
	if err != nil {
		return err
	}
	if !rep.OK() {
		if err := printPreflight(o.Streams.ErrOut, rep, newColors(o.RootOptions, o.Streams.ErrOut)); err != nil {
			return err
		}
		return fmt.Errorf("preflight: %s; not deploying (drop --preflight to deploy anyway)", rep.Problem())
	}
	return nil
}

// build returns the object to apply: from the file, or only the fields the flags set.
func (o *DeployOptions) build() (*unstructured.Unstructured, error) {
	if o.File != "" {
		return o.fromFile()
	}
	spec := map[string]any{"model": o.Model}
	engine := map[string]any{}
	put := func(m map[string]any, flag, key string, val any) {
		if o.set(flag) {
			m[key] = val
		}
	}
	put(engine, "engine", "type", o.Engine)
	put(engine, "image", "image", o.Image)
	if len(o.Args) > 0 {
		engine["args"] = toAny(o.Args)
	}
	if len(o.Env) > 0 {
		var env []any
		for _, e := range o.Env {
			k, v, _ := strings.Cut(e, "=")
			env = append(env, map[string]any{"name": k, "value": v})
		}
		engine["env"] = env
	}
	put(engine, "port", "port", int64(o.Port))
	res := map[string]any{}
	put(res, "gpus", "gpus", int64(o.GPUs))
	put(res, "cpu", "cpu", o.CPU)
	put(res, "memory", "memory", o.Memory)
	put(spec, "group-size", "groupSize", int64(o.GroupSize))
	put(spec, "replicas", "replicas", int64(o.Replicas))
	rollout := map[string]any{}
	put(rollout, "strategy", "strategy", o.Strategy)
	if o.set("max-surge") {
		rollout["maxSurge"] = intOrString(o.MaxSurge)
	}
	if o.set("max-unavailable") {
		rollout["maxUnavailable"] = intOrString(o.MaxUnavailable)
	}
	put(rollout, "partition", "partition", int64(o.Partition))
	put(rollout, "progress-deadline", "progressDeadline", o.Deadline.String())
	weights := map[string]any{}
	put(weights, "weights", "source", o.Weights)
	put(weights, "shared-memory", "sharedMemory", o.SharedMemory)
	readiness := map[string]any{}
	put(readiness, "startup-timeout", "startupTimeout", o.StartupTimeout.String())
	for key, m := range map[string]map[string]any{"engine": engine, "resources": res, "rollout": rollout, "weights": weights, "readiness": readiness} {
		if len(m) > 0 {
			spec[key] = m
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(),
		"kind":       "ModelServing",
		"metadata":   map[string]any{"name": o.Name, "namespace": o.namespace},
		"spec":       spec,
	}}
	return u, nil
}

func intOrString(s string) any {
	v := intstr.Parse(s)
	if v.Type == intstr.Int {
		return int64(v.IntVal)
	}
	return s
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// fromFile reads one ModelServing manifest. The namespace comes from the file or -n; a name given
// on the command line must agree with the file's.
func (o *DeployOptions) fromFile() (*unstructured.Unstructured, error) {
	var r io.Reader
	if o.File == "-" {
		r = o.Streams.In
	} else {
		f, err := os.Open(o.File)
		if err != nil {
			return nil, fmt.Errorf("-f: %w", err)
		}
		defer f.Close()
		r = f
	}
	u := &unstructured.Unstructured{}
	if err := yaml.NewYAMLOrJSONDecoder(r, 4096).Decode(&u.Object); err != nil {
		return nil, fmt.Errorf("-f %s: not a YAML or JSON manifest: %w", o.File, err)
	}
	if gvk := u.GroupVersionKind(); gvk != v1.GroupVersion.WithKind("ModelServing") {
		return nil, fmt.Errorf("-f %s: expected apiVersion %s, kind ModelServing; got apiVersion %q, kind %q", o.File, v1.GroupVersion, u.GetAPIVersion(), u.GetKind())
	}
	switch {
	case u.GetName() == "" && o.Name == "":
		return nil, fmt.Errorf("-f %s: the manifest has no metadata.name: give NAME or set it in the file", o.File)
	case u.GetName() == "":
		u.SetName(o.Name)
	case o.Name != "" && o.Name != u.GetName():
		return nil, fmt.Errorf("NAME %q does not match metadata.name %q in %s", o.Name, u.GetName(), o.File)
	}
	if ns := u.GetNamespace(); ns != "" && o.ConfigFlags.Namespace != nil && *o.ConfigFlags.Namespace != "" && ns != o.namespace {
		return nil, fmt.Errorf("the namespace from -n (%s) does not match metadata.namespace (%s) in %s", o.namespace, ns, o.File)
	}
	if u.GetNamespace() == "" {
		u.SetNamespace(o.namespace)
	}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if err := checkManifest(u); err != nil {
		return nil, fmt.Errorf("-f %s: %w", o.File, err)
	}
	return u, nil
}

// checkManifest decodes the manifest strictly, as the operator will: a misspelt field (which the
// API server would silently drop) or a spec.template that is not a pod template is refused here,
// naming the field, before anything is applied. Values are left to the API server's rules.
func checkManifest(u *unstructured.Unstructured) error {
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	var ms v1.ModelServing
	strict, err := sigsjson.UnmarshalStrict(raw, &ms, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return fmt.Errorf("not a ModelServing: %w", err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("%s: fix or remove the field (kubectl explain modelservings.spec lists the fields)", strings.Join(msgs, "; "))
	}
	_, err = v1.DecodeTemplate(ms.Spec.Template)
	return err
}
