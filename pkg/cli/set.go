package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

func newSetCommand(root *RootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set SUBCOMMAND",
		Short: "Change one setting of a serving",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newSetImageCommand(root))
	return cmd
}

// SetImageOptions change the engine image, which starts a rollout.
type SetImageOptions struct {
	*RootOptions
	servingTarget
	Image string
	servingOutput
}

func newSetImageCommand(root *RootOptions) *cobra.Command {
	o := &SetImageOptions{RootOptions: root}
	cmd := &cobra.Command{
		Use:   "image NAME IMAGE",
		Short: "Set the engine image: the groups roll to it under the rollout rules",
		Long: `Set spec.engine.image. The operator records a new revision and rolls the groups to it group by
group (within maxSurge and maxUnavailable, above the partition). Follow it with
kubectl llm rollout status NAME.`,
		Example:           "  kubectl llm set image qwen vllm/vllm-openai:v0.11.1",
		ValidArgsFunction: completeServingNames(root),
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
	o.addOutputFlag(cmd)
	return cmd
}

// Complete reads NAME and IMAGE and resolves the client.
func (o *SetImageOptions) Complete(_ *cobra.Command, args []string) error {
	if len(args) == 2 {
		o.Image = args[1]
	}
	return o.complete(o.RootOptions, args)
}

// Validate checks the image reference looks like one.
func (o *SetImageOptions) Validate() error {
	if len(o.args) != 2 {
		return fmt.Errorf("expected NAME and IMAGE, got %d argument(s): kubectl llm set image NAME IMAGE", len(o.args))
	}
	if o.Image == "" || strings.ContainsAny(o.Image, " \t\n") {
		return fmt.Errorf("IMAGE %q is not an image reference such as vllm/vllm-openai:v0.11.0", o.Image)
	}
	return o.validateOutput()
}

// Run patches spec.engine.image.
func (o *SetImageOptions) Run(ctx context.Context) error {
	unchanged := false
	ms, err := patchServing(ctx, o.client, o.namespace, o.Name, o.host(), func(ms *v1.ModelServing) error {
		unchanged = ms.Spec.Engine.Image == o.Image
		ms.Spec.Engine.Image = o.Image
		return nil
	})
	if err != nil {
		return err
	}
	verb := "image updated"
	if unchanged {
		verb = "image unchanged"
	}
	return o.printChanged(o.Streams.Out, ms, "%s %s\n", qualified(o.Name), verb)
}
