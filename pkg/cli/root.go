// Package cli holds the kubectl llm commands: one file per command, each an Options struct with
// Complete, Validate and Run. It may import api, status, operator and tui; nothing imports it but cmd.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Main runs the command line and returns the process exit code.
func Main(args []string, in io.Reader, out, errOut io.Writer) int {
	cmd := NewRootCommand(in, out, errOut)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(errOut, "error:", err)
		var ec interface{ ExitCode() int }
		if errors.As(err, &ec) {
			return ec.ExitCode()
		}
		return 1
	}
	return 0
}

// NewRootCommand builds the kubectl llm command tree.
func NewRootCommand(in io.Reader, out, errOut io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "kubectl-llm",
		Short:         "Deploy, roll out and watch LLM model servings on LeaderWorkerSet groups",
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl llm"},
	}
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	root.AddCommand(newVersionCommand(out))
	return root
}
