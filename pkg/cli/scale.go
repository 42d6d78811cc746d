package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// ScaleOptions set the number of groups through the scale subresource.
type ScaleOptions struct {
	*RootOptions
	servingTarget
	Replicas int32
	// Role, when set, scales that role of a serving with spec.roles (spec.roles[name].replicas).
	Role string
	servingOutput

	set func(string) bool
}

func newScaleCommand(root *RootOptions) *cobra.Command {
	o := &ScaleOptions{RootOptions: root}
	cmd := &cobra.Command{
		Use:   "scale NAME --replicas N [--role ROLE]",
		Short: "Set the number of groups (through the scale subresource), or of one role's groups",
		Long: `Set the number of groups through the serving's scale subresource, the same door an autoscaler
uses. Each group is groupSize pods.

A serving with roles (spec.roles: prefill and decode) counts each role's groups on its own: scale
one role with --role, which sets spec.roles[name=ROLE].replicas. A role cannot go to 0 groups while
the other has some (neither serves alone).`,
		Example:           "  kubectl llm scale qwen --replicas 3\n  kubectl llm scale qwen-pd --role decode --replicas 8",
		ValidArgsFunction: completeServingNames(root),
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
	cmd.Flags().Int32Var(&o.Replicas, "replicas", 0, "The number of groups (required)")
	cmd.Flags().StringVar(&o.Role, "role", "", "Scale this role of a serving with roles: prefill or decode")
	_ = cmd.RegisterFlagCompletionFunc("role", completeRoleNames)
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
	if o.Replicas < 0 {
		return fmt.Errorf("--replicas must be 0 or more groups, not %d", o.Replicas)
	}
	if o.set("role") {
		if err := validateRoleFlag(o.Role); err != nil {
			return err
		}
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
	if err := checkRoleFlag(ms, o.Role, o.set("role"), "scale", "--replicas"); err != nil {
		return err
	}
	if o.set("role") {
		return o.scaleRole(ctx)
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

// scaleRole sets spec.roles[name=role].replicas, locked on the resourceVersion read (a merge patch
// replaces the whole list of roles, so it must be of the list as it is).
func (o *ScaleOptions) scaleRole(ctx context.Context) error {
	role := v1.RoleName(o.Role)
	ms, err := patchServing(ctx, o.client, o.namespace, o.Name, o.host(), func(ms *v1.ModelServing) error {
		r := ms.Spec.Role(role)
		if r == nil {
			return fmt.Errorf("--role %s: serving %q has no such role any more", role, ms.Name)
		}
		r.Replicas = ptr.To(o.Replicas)
		return nil
	})
	if err != nil {
		return err
	}
	return o.printChanged(o.Streams.Out, ms, "%s role %s scaled to %d group(s)\n", qualified(o.Name), role, o.Replicas)
}
