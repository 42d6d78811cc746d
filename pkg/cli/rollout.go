package cli

import (
	"github.com/spf13/cobra"
)

func newRolloutCommand(root *RootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout SUBCOMMAND",
		Short: "Watch, list, undo, pause and resume the rollout of a serving",
		Long: `Manage the rollout of a serving, group by group, like kubectl rollout does for a Deployment.
Every distinct pod-affecting spec is recorded by the operator as a revision (a ControllerRevision).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newRolloutStatusCommand(root), newRolloutHistoryCommand(root), newRolloutUndoCommand(root),
		newRolloutPauseCommand(root, true), newRolloutPauseCommand(root, false), newRolloutPlanCommand(root))
	return cmd
}
