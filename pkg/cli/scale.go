package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// ScaleOptions set the number of groups through the scale subresource.
type ScaleOptions struct {
	*RootOptions
	servingTarget
	Replicas int32
	servingOutput

	set func(string) bool
}

func newScaleCommand(root *RootOptions) *cobra.Command {
	o := &ScaleOptions{RootOptions: root}
	cmd := &cobra.Command{
		Use:   "scale NAME --replicas N",
		Short: "Set the number of groups (through the scale subresource)",
		Long: `Set the number of groups through the serving's scale subresource, the same door an autoscaler
uses. Each group is groupSize pods.`,
		Example:           "  kubectl llm scale qwen --replicas 3",
		ValidArgsFunction: completeServingNames(root),
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
	cmd.Flags().Int32Var(&o.Replicas, "replicas", 0, "The number of groups (required)")
	o.addOutputFlag(cmd)
	return cmd
}

// Complete reads NAME and resolves the client.
func (o *ScaleOptions) Complete(cmd *cobra.Command, args []string) error {
	o.set = cmd.Flags().Changed
	return o.complete(o.RootOptions, args)
}

// Validate checks --replicas.
func (o *ScaleOptions) Validate() error {
	if err := o.validateOneName("kubectl llm scale NAME --replicas N"); err != nil {
		return err
	}
	if !o.set("replicas") {
		return fmt.Errorf("--replicas is required: the number of groups, e.g. --replicas 2")
	}
	return o.validateOutput()
}

// Run merge-patches the scale subresource.
func (o *ScaleOptions) Run(ctx context.Context) error {
	host := o.host()
	ms, err := getServing(ctx, o.client, o.namespace, o.Name, host)
	if err != nil {
		return err
	}
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, o.Replicas))
	scale := &autoscalingv1.Scale{}
	if err := o.client.SubResource("scale").Patch(ctx, ms, patch, client.WithSubResourceBody(scale), client.FieldOwner(v1.FieldManager)); err != nil {
		return explain(err, host)
	}
	if o.wantsObject() {
		if ms, err = getServing(ctx, o.client, o.namespace, o.Name, host); err != nil {
			return err
		}
	}
	return o.printChanged(o.Streams.Out, ms, "%s scaled to %d group(s)\n", qualified(o.Name), scale.Spec.Replicas)
}
