package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
)

// RolloutUndoOptions write a recorded revision's spec back into the serving.
type RolloutUndoOptions struct {
	*RootOptions
	servingTarget
	ToRevision int64
	servingOutput
}

func newRolloutUndoCommand(root *RootOptions) *cobra.Command {
	o := &RolloutUndoOptions{RootOptions: root}
	cmd := &cobra.Command{
		Use:   "undo NAME [--to-revision N]",
		Short: "Roll back to a recorded revision (the previous one by default)",
		Long: `Write the pod-affecting spec a revision recorded (model, engine, resources, group size, template...)
back into the serving; replicas, rollout settings and restart stay as they are. The operator then
rolls the groups to it under the usual rollout rules. Without --to-revision, the newest revision
other than the one the spec asks for now.`,
		Example:           "  kubectl llm rollout undo qwen\n  kubectl llm rollout undo qwen --to-revision 2",
		ValidArgsFunction: completeServingNames(root),
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
	cmd.Flags().Int64Var(&o.ToRevision, "to-revision", 0, "The revision to roll back to (0: the previous one)")
	o.addOutputFlag(cmd)
	return cmd
}

// Complete reads NAME and resolves the client.
func (o *RolloutUndoOptions) Complete(_ *cobra.Command, args []string) error {
	return o.complete(o.RootOptions, args)
}

// Validate checks --to-revision.
func (o *RolloutUndoOptions) Validate() error {
	if err := o.validateOneName("kubectl llm rollout undo NAME [--to-revision N]"); err != nil {
		return err
	}
	if o.ToRevision < 0 {
		return fmt.Errorf("--to-revision must be 0 (the previous revision) or a revision number, not %d", o.ToRevision)
	}
	return o.validateOutput()
}

// Run patches the serving's spec with the target revision.
func (o *RolloutUndoOptions) Run(ctx context.Context) error {
	host := o.host()
	ms, revs, err := servingRevisions(ctx, o.client, o.namespace, o.Name, host)
	if err != nil {
		return err
	}
	isSpec := specMatcher(ms)
	target := o.ToRevision
	if target == 0 {
		for i := len(revs) - 1; i >= 0; i-- {
			if !isSpec(&revs[i]) {
				target = revs[i].Revision
				break
			}
		}
		if target == 0 {
			return fmt.Errorf("serving %q has no previous revision to roll back to (kubectl llm rollout history %s lists what is recorded)", o.Name, o.Name)
		}
	}
	cr, err := findRevision(revs, target, o.Name)
	if err != nil {
		return err
	}
	if isSpec(cr) {
		return o.printChanged(o.Streams.Out, ms, "%s skipped rollback (the spec already matches revision %d)\n", qualified(o.Name), target)
	}
	rs, err := revision.Decode(cr)
	if err != nil {
		return err
	}
	ms, err = patchServing(ctx, o.client, o.namespace, o.Name, host, func(ms *v1.ModelServing) error {
		return rs.Into(&ms.Spec)
	})
	if err != nil {
		return err
	}
	return o.printChanged(o.Streams.Out, ms, "%s rolled back to revision %d (%s)\n", qualified(o.Name), target, cr.Name)
}
