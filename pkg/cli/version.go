package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// Set by the release build (-ldflags -X).
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

func newVersionCommand(o *RootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the client version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(o.Streams.Out, "Client Version: %s (commit %s, built %s)\n", version, commit, date)
			return err
		},
	}
}
