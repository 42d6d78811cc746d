package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Set by the release build (-ldflags -X).
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

// VersionOptions print the client version and, when a cluster is reachable, the API versions it serves.
type VersionOptions struct {
	*RootOptions
	Client bool
}

func newVersionCommand(root *RootOptions) *cobra.Command {
	o := &VersionOptions{RootOptions: root}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the client version, and the cluster's API versions and operator",
		Long: `Print the client version and which versions of the ModelServing and LeaderWorkerSet APIs the
cluster serves and which operator image runs (as installed by kubectl llm install). A cluster that
cannot be reached is an error (exit 1) after the client version; --client never asks the cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.Run(cmd.Context()) },
	}
	cmd.Flags().BoolVar(&o.Client, "client", false, "Print only the client version")
	return cmd
}

// Run prints the versions; after the client version, an unreachable cluster is an error.
func (o *VersionOptions) Run(ctx context.Context) error {
	fmt.Fprintf(o.Streams.Out, "Client Version: %s (commit %s, built %s)\n", version, commit, date)
	if o.Client {
		return nil
	}
	c, _, err := o.clientAndNamespace()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, api := range []struct{ what, crd string }{
		{"ModelServing API", servingCRDName},
		{"LeaderWorkerSet API", lwsCRDName},
	} {
		ch := crdCheck(ctx, c, api.what, api.crd)
		if reach := unreachable(ch.err, o.host()); reach != nil {
			return reach
		}
		detail := ch.Detail
		if ch.Result == "FAIL" {
			detail = "not installed"
		}
		fmt.Fprintf(o.Streams.Out, "%s: %s\n", api.what, detail)
	}
	fmt.Fprintf(o.Streams.Out, "Operator: %s\n", operatorVersion(ctx, c))
	return nil
}

// operatorVersion describes the operator Deployment install creates: its image and readiness.
func operatorVersion(ctx context.Context, c client.Client) string {
	d := &appsv1.Deployment{}
	err := c.Get(ctx, client.ObjectKey{Namespace: "kubectl-llm-system", Name: "kubectl-llm-operator"}, d)
	switch {
	case apierrors.IsNotFound(err):
		return "not installed in kubectl-llm-system (kubectl llm install, or run kubectl llm operator yourself)"
	case err != nil:
		return "unknown: " + explain(err, "").Error()
	}
	image := "<no containers>"
	if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 {
		image = cs[0].Image
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return fmt.Sprintf("%s (%d/%d ready)", image, d.Status.ReadyReplicas, want)
}
