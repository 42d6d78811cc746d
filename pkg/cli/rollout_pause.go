package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// RolloutPauseOptions pause (or resume) template propagation of a serving.
type RolloutPauseOptions struct {
	*RootOptions
	servingTarget
	Pause bool // false: resume
	servingOutput
}

func newRolloutPauseCommand(root *RootOptions, pause bool) *cobra.Command {
	o := &RolloutPauseOptions{RootOptions: root, Pause: pause}
	cmd := &cobra.Command{
		Use:   "pause NAME",
		Short: "Pause a rollout: new revisions wait, scaling still works",
		Long: `Set spec.rollout.paused: the operator stops moving groups to new revisions (scaling and restarts of
single groups still work) until kubectl llm rollout resume.`,
		Example:           "  kubectl llm rollout pause qwen",
		ValidArgsFunction: completeServingNames(root),
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
	if !pause {
		cmd.Use = "resume NAME"
		cmd.Short = "Resume a paused rollout"
		cmd.Long = "Clear spec.rollout.paused: the operator moves the groups to the revision the spec asks for."
		cmd.Example = "  kubectl llm rollout resume qwen"
	}
	o.addOutputFlag(cmd)
	return cmd
}

func (o *RolloutPauseOptions) verb() string {
	if o.Pause {
		return "pause"
	}
	return "resume"
}

// Complete reads NAME and resolves the client.
func (o *RolloutPauseOptions) Complete(_ *cobra.Command, args []string) error {
	return o.complete(o.RootOptions, args)
}

// Validate checks -o.
func (o *RolloutPauseOptions) Validate() error {
	if err := o.validateOneName("kubectl llm rollout " + o.verb() + " NAME"); err != nil {
		return err
	}
	return o.validateOutput()
}

// Run sets or clears spec.rollout.paused; doing it twice is an error, like kubectl.
func (o *RolloutPauseOptions) Run(ctx context.Context) error {
	ms, err := patchServing(ctx, o.client, o.namespace, o.Name, o.host(), func(ms *v1.ModelServing) error {
		if ms.Spec.Rollout.Paused == o.Pause {
			if o.Pause {
				return fmt.Errorf("serving %q is already paused", o.Name)
			}
			return fmt.Errorf("serving %q is not paused", o.Name)
		}
		ms.Spec.Rollout.Paused = o.Pause
		return nil
	})
	if err != nil {
		return err
	}
	return o.printChanged(o.Streams.Out, ms, "%s %sd\n", qualified(o.Name), o.verb())
}
