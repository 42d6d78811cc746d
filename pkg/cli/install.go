package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/config"
)

const (
	lwsCRDName     = "leaderworkersets.leaderworkerset.x-k8s.io"
	servingCRDName = "modelservings.serving.kubectl-llm.dev"
	// operatorRepository is where releases publish the operator image, tagged with the release's
	// version: the install pins the image to the CLI's own version, never to a moving tag.
	operatorRepository = "ghcr.io/kubectl-llm/kubectl-llm"
)

// resourceName is kubectl's kind.group/name of an object, for the lines install prints.
func resourceName(u *unstructured.Unstructured) string {
	kind := strings.ToLower(u.GetKind())
	if g := u.GroupVersionKind().Group; g != "" {
		kind += "." + g
	}
	return kind + "/" + u.GetName()
}

// InstallOptions apply the CRDs, RBAC and operator Deployment embedded in the binary.
type InstallOptions struct {
	*RootOptions
	LWS     string
	Image   string
	DryRun  string
	output  *outputFlags
	Wait    bool
	Timeout time.Duration

	client client.WithWatch
}

func newInstallCommand(root *RootOptions) *cobra.Command {
	o := &InstallOptions{RootOptions: root}
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install the ModelServing CRD, RBAC and the operator (server-side apply)",
		Long: `Server-side apply, with the field manager kubectl-llm, the manifests embedded in this binary: the
ModelServing CRD, the namespace kubectl-llm-system, the operator's RBAC and its Deployment.

--lws=external expects LeaderWorkerSet to be installed in the cluster; --lws=embedded installs
the LeaderWorkerSet CRD too and runs the operator with the upstream LWS reconcilers and webhooks
inside; --lws=auto (the default) picks embedded when the cluster has no LeaderWorkerSet CRD.

--dry-run=client -o yaml prints the manifests instead, for GitOps. It never contacts a cluster,
so the render is the same on every machine: there --lws=auto renders --lws=external (it says so
on stderr). External is the safe guess: applied to a cluster without LeaderWorkerSet, the
operator says the LWS CRD is missing; an embedded render applied where LWS is installed would
run a second set of LWS controllers over the same objects. Pass --lws=embedded to render the
operator hosting LWS.`,
		Example: `  kubectl llm install
  kubectl llm install --lws=embedded --image registry.example.com/kubectl-llm:v0.1.0
  kubectl llm install --dry-run=client -o yaml > kubectl-llm.yaml`,
		Args: cobra.NoArgs,
		RunE: runE(o.Complete, o.Validate, o.Run),
	}
	f := cmd.Flags()
	f.StringVar(&o.LWS, "lws", "auto", "LeaderWorkerSet: external (installed in the cluster), embedded (hosted by the operator) or auto")
	f.StringVar(&o.Image, "image", defaultOperatorImage(), "The operator image (default: the release of this kubectl llm's own version)")
	f.StringVar(&o.DryRun, "dry-run", "none", `"none", "client" (print the manifests) or "server" (validate on the API server, write nothing)`)
	f.Lookup("dry-run").NoOptDefVal = "client"
	o.output = newOutputFlags("")
	o.output.addFlags(cmd, "Print the manifests (yaml, json) or their names (name) instead of a line per applied object (a client dry run prints yaml)")
	f.BoolVar(&o.Wait, "wait", true, "Wait until the CRDs are established")
	f.DurationVar(&o.Timeout, "timeout", time.Minute, "How long --wait waits")
	return cmd
}

// Complete resolves the client; a client dry run renders offline and needs none.
func (o *InstallOptions) Complete(_ *cobra.Command, _ []string) error {
	if o.DryRun == "client" {
		return nil
	}
	var err error
	o.client, _, err = o.clientAndNamespace()
	return err
}

// Validate checks the flags.
func (o *InstallOptions) Validate() error {
	switch o.LWS {
	case "auto", "external", "embedded":
	default:
		return fmt.Errorf("--lws must be external, embedded or auto, not %q", o.LWS)
	}
	switch o.DryRun {
	case "none", "client", "server":
	default:
		return fmt.Errorf(`--dry-run must be "none", "client" or "server", not %q`, o.DryRun)
	}
	if o.Image == "" || strings.ContainsAny(o.Image, " \t\n") {
		return fmt.Errorf("--image %q is not an image reference", o.Image)
	}
	if o.DryRun == "client" && o.output.format() == "" {
		o.output.setFormat("yaml") // a client dry run is for its render
	}
	return o.output.validate()
}

// Run applies the manifests in order: namespace and CRDs first, the operator last.
func (o *InstallOptions) Run(ctx context.Context) error {
	host := o.host()
	variant, err := o.variant(ctx)
	if err != nil {
		return err
	}
	objs, err := config.Manifests(variant)
	if err != nil {
		return err
	}
	if variant == "embedded" && o.DryRun != "client" {
		if err := o.checkNoOtherLWS(ctx, objs, host); err != nil {
			return err
		}
	}
	for _, u := range objs {
		if isOperatorDeployment(u) {
			if err := setImage(u, o.Image); err != nil {
				return err
			}
		}
	}
	if o.DryRun == "client" {
		return o.printManifests(objs)
	}
	opts := []client.ApplyOption{client.FieldOwner(v1.FieldManager), client.ForceOwnership}
	suffix := "serverside-applied"
	if o.DryRun == "server" {
		opts, suffix = append(opts, client.DryRunAll), "serverside-applied (server dry run)"
	}
	for _, u := range objs {
		if isOperatorDeployment(u) && o.Image == defaultOperatorImage() && version == "dev" && o.DryRun == "none" {
			// Said where it matters, and only once the objects before it could be applied.
			fmt.Fprintf(o.Streams.ErrOut, "Warning: this kubectl llm is a development build; its operator image %s is not published: pass --image with an image you built.\n", o.Image)
		}
		if err := o.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), opts...); err != nil {
			return fmt.Errorf("apply %s: %w", resourceName(u), explain(err, host))
		}
		if o.output.ownFormat() {
			fmt.Fprintf(o.Streams.Out, "%s %s\n", resourceName(u), suffix)
		}
	}
	if o.Wait && o.DryRun == "none" {
		for _, u := range objs {
			if u.GetKind() == "CustomResourceDefinition" {
				if err := o.waitEstablished(ctx, u.GetName()); err != nil {
					return err
				}
			}
		}
	}
	if !o.output.ownFormat() {
		return o.printManifests(objs)
	}
	return nil
}

// variant picks the manifests: embedded when asked, or (auto) when the cluster has no LWS CRD.
func (o *InstallOptions) variant(ctx context.Context) (string, error) {
	switch o.LWS {
	case "embedded":
		return "embedded", nil
	case "external":
		return "default", nil
	}
	if o.DryRun == "client" {
		fmt.Fprintln(o.Streams.ErrOut, "--dry-run=client with --lws=auto renders --lws=external (LeaderWorkerSet installed in the cluster); pass --lws=embedded for the operator to host LWS.")
		return "default", nil
	}
	switch ch := crdCheck(ctx, o.client, "LeaderWorkerSet API", lwsCRDName); ch.Result {
	case "ok":
		return "default", nil
	case "FAIL":
		fmt.Fprintln(o.Streams.ErrOut, "No LeaderWorkerSet CRD in the cluster: installing it, with the operator hosting LWS (--lws=embedded).")
		return "embedded", nil
	default:
		if reach := unreachable(ch.err, o.host()); reach != nil {
			return "", reach // choosing --lws would not help
		}
		return "", fmt.Errorf("cannot tell whether LeaderWorkerSet is installed (%s): choose --lws=external or --lws=embedded", ch.Detail)
	}
}

// isOperatorDeployment is true for the manifest of the operator's Deployment.
func isOperatorDeployment(u *unstructured.Unstructured) bool {
	return u.GetKind() == "Deployment" && u.GetName() == "kubectl-llm-operator"
}

// defaultOperatorImage is the operator image of this binary's own version.
func defaultOperatorImage() string { return operatorRepository + ":" + version }

// checkNoOtherLWS refuses an embedded install where LeaderWorkerSet is already installed by
// someone else, or where its CRD serves a version newer than the LWS this binary embeds: a
// second set of LWS controllers over the same objects, or an older CRD applied over a newer one,
// would break the LeaderWorkerSets already there.
func (o *InstallOptions) checkNoOtherLWS(ctx context.Context, objs []*unstructured.Unstructured, host string) error {
	var embedded *unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "CustomResourceDefinition" && u.GetName() == lwsCRDName {
			embedded = u
		}
	}
	live := &unstructured.Unstructured{}
	live.SetAPIVersion("apiextensions.k8s.io/v1")
	live.SetKind("CustomResourceDefinition")
	if err := o.client.Get(ctx, client.ObjectKey{Name: lwsCRDName}, live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("look for an installed LeaderWorkerSet: %w", explain(err, host))
	}
	return embeddedLWSConflict(live, embedded, installedByUs(live))
}

// embeddedLWSConflict says why the embedded LWS must not be installed over the live LWS CRD.
func embeddedLWSConflict(live, embedded *unstructured.Unstructured, ours bool) error {
	if !ours {
		return fmt.Errorf("LeaderWorkerSet is already installed in this cluster (its CRD %s was not installed by kubectl llm): "+
			"install with --lws=external, so that one set of LWS controllers runs", lwsCRDName)
	}
	known := map[string]bool{}
	for _, v := range crdVersions(embedded) {
		known[v] = true
	}
	var newer []string
	for _, v := range crdVersions(live) {
		if !known[v] {
			newer = append(newer, v)
		}
	}
	if len(newer) > 0 {
		return fmt.Errorf("the cluster's LeaderWorkerSet CRD serves %s, which the LeaderWorkerSet this kubectl llm embeds does not know: "+
			"a newer LWS is installed; install with --lws=external, or use a kubectl llm that embeds that LWS", strings.Join(newer, ", "))
	}
	return nil
}

// crdVersions are the names of the versions a CRD serves.
func crdVersions(crd *unstructured.Unstructured) []string {
	if crd == nil {
		return nil
	}
	vs, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var out []string
	for _, v := range vs {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		if served, _ := m["served"].(bool); served && name != "" {
			out = append(out, name)
		}
	}
	return out
}

func setImage(u *unstructured.Unstructured, image string) error {
	containers, _, err := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if err != nil || len(containers) == 0 {
		return fmt.Errorf("the embedded operator Deployment has no containers")
	}
	c, ok := containers[0].(map[string]any)
	if !ok {
		return fmt.Errorf("the embedded operator Deployment's container is malformed")
	}
	c["image"] = image
	containers[0] = c
	return unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
}

// printManifests prints each manifest in the -o format (yaml separates them with ---).
func (o *InstallOptions) printManifests(objs []*unstructured.Unstructured) error {
	for _, u := range objs {
		if err := o.output.printObject(u, o.Streams.Out); err != nil {
			return err
		}
	}
	return nil
}

func (o *InstallOptions) waitEstablished(ctx context.Context, name string) error {
	waitCtx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName(name)
	err := waitForObject(waitCtx, o.client, crd, func(live *unstructured.Unstructured) bool {
		if live == nil {
			return false // not there yet
		}
		conds, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return true
			}
		}
		return false
	})
	if err != nil {
		return timedOut(err, fmt.Errorf("the CRD %s was not established within %s: %w", name, o.Timeout, err))
	}
	return nil
}

// installedByUs says whether kubectl llm applied an object (so uninstall may delete it).
func installedByUs(u *unstructured.Unstructured) bool {
	for _, mf := range u.GetManagedFields() {
		if mf.Manager == v1.FieldManager && mf.Operation == "Apply" {
			return true
		}
	}
	return false
}
