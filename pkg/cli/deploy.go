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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsjson "sigs.k8s.io/json"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	msac "github.com/kubectl-llm/kubectl-llm/api/v1alpha1/applyconfiguration/api/v1alpha1"
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
	// Roles are the --prefill-* and --decode-* flags, one entry per role name.
	Roles     map[v1.RoleName]*roleFlags
	DryRun    string
	output    *outputFlags
	Preflight bool

	set func(flag string) bool // whether a flag was given
}

// specFlags are the flags that build the spec; they cannot be mixed with -f.
var specFlags = append([]string{"model", "engine", "image", "arg", "env", "port", "gpus", "cpu", "memory", "group-size", "replicas",
	"strategy", "max-surge", "max-unavailable", "partition", "weights", "shared-memory", "startup-timeout", "progress-deadline"}, allRoleFlags()...)

// roleFlags are one role's flags: --ROLE-replicas, --ROLE-group-size, --ROLE-gpus.
type roleFlags struct {
	Replicas, GroupSize, GPUs int32
}

// roleFlagNames are the flags of a role, replicas first.
func roleFlagNames(role v1.RoleName) []string {
	r := string(role)
	return []string{r + "-replicas", r + "-group-size", r + "-gpus"}
}

func allRoleFlags() []string {
	var out []string
	for _, r := range v1.RoleNames() {
		out = append(out, roleFlagNames(r)...)
	}
	return out
}

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
--preflight refuses to deploy when the cluster's spare GPUs cannot hold the groups.

--prefill-replicas and --decode-replicas make a disaggregated serving (spec.roles): prefill groups
and decode groups, each with its own group size (--prefill-group-size, --decode-group-size) and
GPUs per pod (--prefill-gpus, --decode-gpus; the others default to --group-size and --gpus). Give
both roles: neither serves alone. --replicas and --partition do not apply with roles; for anything
else of a role (args, scheduling, rollout limits) use -f with a full spec.`,
		Example: `  # one single-node group of Qwen on vLLM with 1 GPU
  kubectl llm deploy qwen --model Qwen/Qwen3-0.6B --gpus 1

  # two groups of 2 pods with 8 GPUs each, rolling with one spare group
  kubectl llm deploy big --model deepseek-ai/DeepSeek-R1 --gpus 8 --group-size 2 --replicas 2 --max-surge 1 --max-unavailable 0

  # disaggregated: 2 prefill groups and 6 decode groups of 2 pods, 1 GPU each
  kubectl llm deploy qwen-pd --model Qwen/Qwen3-8B --gpus 1 --prefill-replicas 2 --decode-replicas 6 --prefill-group-size 2 --decode-group-size 2
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
	o.Roles = map[v1.RoleName]*roleFlags{}
	for _, role := range v1.RoleNames() {
		rf := &roleFlags{}
		o.Roles[role] = rf
		names := roleFlagNames(role)
		f.Int32Var(&rf.Replicas, names[0], 0, fmt.Sprintf("Groups of the %s role (with roles, give both --prefill-replicas and --decode-replicas)", role))
		f.Int32Var(&rf.GroupSize, names[1], 0, fmt.Sprintf("Pods per %s group (default --group-size)", role))
		f.Int32Var(&rf.GPUs, names[2], 0, fmt.Sprintf("nvidia.com/gpu per %s pod (default --gpus)", role))
	}
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
		if o.Model == "" {
			return fmt.Errorf("--model is required: the model the engine serves, e.g. --model Qwen/Qwen3-0.6B")
		}
	}
	if err := o.validateRoles(); err != nil {
		return err
	}
	// What the flags set, the CRD's schema and CEL rules judge (names, ranges, the engine and
	// strategy, maxSurge with maxUnavailable, the weights source, durations): the API server's
	// message is the message. Checked here is only what cannot be sent at all.
	for _, q := range []struct{ name, val string }{{"cpu", o.CPU}, {"memory", o.Memory}, {"shared-memory", o.SharedMemory}} {
		if q.val == "" {
			continue
		}
		if _, err := resource.ParseQuantity(q.val); err != nil {
			return fmt.Errorf("--%s must be a quantity such as 8 or 64Gi, not %q", q.name, q.val)
		}
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
	if ch := crdCheck(ctx, o.client, "LeaderWorkerSet API", lwsCRDName); ch.Result == "FAIL" {
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

// build returns the object to apply: from the file, or only the fields the flags set (a typed
// apply configuration: what is not given is not sent, so not owned).
func (o *DeployOptions) build() (*unstructured.Unstructured, error) {
	if o.File != "" {
		return o.fromFile()
	}
	spec, err := o.specFromFlags()
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(msac.ModelServing(o.Name, o.namespace).WithSpec(spec))
	if err != nil {
		return nil, fmt.Errorf("encode the serving: %w", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("encode the serving: %w", err)
	}
	return u, nil
}

// specFromFlags is the spec of the flags that were given, and only of those.
func (o *DeployOptions) specFromFlags() (*msac.ModelServingSpecApplyConfiguration, error) {
	spec := msac.ModelServingSpec().WithModel(o.Model)
	eng := lazily(msac.EngineSpec, func(e *msac.EngineSpecApplyConfiguration) { spec.WithEngine(e) })
	resources := lazily(msac.ResourceSpec, func(r *msac.ResourceSpecApplyConfiguration) { spec.WithResources(r) })
	roll := lazily(msac.RolloutSpec, func(r *msac.RolloutSpecApplyConfiguration) { spec.WithRollout(r) })
	wts := lazily(msac.WeightsSpec, func(w *msac.WeightsSpecApplyConfiguration) { spec.WithWeights(w) })
	var err error
	quantity := func(flag, s string, set func(resource.Quantity)) {
		if err != nil || !o.set(flag) {
			return
		}
		q, perr := resource.ParseQuantity(s) // Validate checked it
		if perr != nil {
			err = fmt.Errorf("--%s: %w", flag, perr)
			return
		}
		set(q)
	}
	if o.set("engine") {
		eng().WithType(v1.EngineType(o.Engine))
	}
	if o.set("image") {
		eng().WithImage(o.Image)
	}
	if len(o.Args) > 0 {
		eng().WithArgs(o.Args...)
	}
	for _, e := range o.Env {
		k, v, _ := strings.Cut(e, "=")
		eng().WithEnv(corev1.EnvVar{Name: k, Value: v})
	}
	if o.set("port") {
		eng().WithPort(o.Port)
	}
	if o.set("gpus") {
		resources().WithGPUs(o.GPUs)
	}
	quantity("cpu", o.CPU, func(q resource.Quantity) { resources().WithCPU(q) })
	quantity("memory", o.Memory, func(q resource.Quantity) { resources().WithMemory(q) })
	if o.set("group-size") {
		spec.WithGroupSize(o.GroupSize)
	}
	if o.set("replicas") {
		spec.WithReplicas(o.Replicas)
	}
	if o.set("strategy") {
		roll().WithStrategy(v1.RolloutStrategyType(o.Strategy))
	}
	if o.set("max-surge") {
		roll().WithMaxSurge(intstr.Parse(o.MaxSurge))
	}
	if o.set("max-unavailable") {
		roll().WithMaxUnavailable(intstr.Parse(o.MaxUnavailable))
	}
	if o.set("partition") {
		roll().WithPartition(o.Partition)
	}
	if o.set("progress-deadline") {
		roll().WithProgressDeadline(metav1.Duration{Duration: o.Deadline})
	}
	if o.set("weights") {
		wts().WithSource(o.Weights)
	}
	quantity("shared-memory", o.SharedMemory, func(q resource.Quantity) { wts().WithSharedMemory(q) })
	if o.set("startup-timeout") {
		spec.WithReadiness(msac.ReadinessSpec().WithStartupTimeout(metav1.Duration{Duration: o.StartupTimeout}))
	}
	if o.withRoles() {
		for _, role := range v1.RoleNames() {
			rf, names := o.Roles[role], roleFlagNames(role)
			rs := msac.RoleSpec().WithName(role).WithReplicas(rf.Replicas)
			if o.set(names[1]) {
				rs.WithGroupSize(rf.GroupSize)
			}
			if o.set(names[2]) {
				rs.WithResources(msac.ResourceSpec().WithGPUs(rf.GPUs))
			}
			spec.WithRoles(rs)
		}
	}
	return spec, err
}

// withRoles reports whether any role flag was given.
func (o *DeployOptions) withRoles() bool {
	for _, f := range allRoleFlags() {
		if o.set(f) {
			return true
		}
	}
	return false
}

// validateRoles refuses a half-specified topology, naming the flag and what to do.
func (o *DeployOptions) validateRoles() error {
	if !o.withRoles() {
		return nil
	}
	for _, f := range []string{"replicas", "partition"} {
		if o.set(f) {
			return fmt.Errorf("--%s does not apply with roles (--prefill-replicas, --decode-replicas): each role counts its own groups and has its own partition; drop --%s", f, f)
		}
	}
	var given, missing []string
	for _, role := range v1.RoleNames() {
		names := roleFlagNames(role)
		if o.set(names[0]) {
			given = append(given, "--"+names[0])
			continue
		}
		missing = append(missing, "--"+names[0])
		for _, f := range names[1:] {
			if o.set(f) {
				return fmt.Errorf("--%s needs --%s: give the role's groups too (a serving with roles needs both prefill and decode groups)", f, names[0])
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s given without %s: a serving with roles needs both prefill and decode groups (neither serves alone); add %s N",
			strings.Join(given, ", "), strings.Join(missing, ", "), strings.Join(missing, " N, "))
	}
	var zero, some []string
	for _, role := range v1.RoleNames() {
		flag := "--" + roleFlagNames(role)[0]
		if o.Roles[role].Replicas == 0 {
			zero = append(zero, flag+" 0")
		} else {
			some = append(some, fmt.Sprintf("%s %d", flag, o.Roles[role].Replicas))
		}
	}
	if len(zero) > 0 && len(some) > 0 {
		return fmt.Errorf("%s with %s: a role with no groups cannot serve the other's requests; give every role groups, or set every role to 0 to stop the serving",
			strings.Join(zero, ", "), strings.Join(some, ", "))
	}
	return nil
}

// lazily makes a part of an apply configuration the first time a flag sets one of its fields, and
// attaches it: a part no flag sets is not sent.
func lazily[T any](newPart func() *T, attach func(*T)) func() *T {
	var part *T
	return func() *T {
		if part == nil {
			part = newPart()
			attach(part)
		}
		return part
	}
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
