// Package cli holds the kubectl llm commands: one file per command, each an Options struct with
// Complete, Validate and Run. It may import api, status, operator and tui; nothing imports it but cmd.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// ExitCoder is an error that carries its own process exit code.
type ExitCoder interface {
	error
	ExitCode() int
}

// Main runs the command line and returns the process exit code.
func Main(args []string, in io.Reader, out, errOut io.Writer) int {
	cmd := NewRootCommand(genericiooptions.IOStreams{In: in, Out: out, ErrOut: errOut})
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(errOut, "error:", err)
		var ec ExitCoder
		if errors.As(err, &ec) {
			return ec.ExitCode()
		}
		return 1
	}
	return 0
}

// RootOptions are shared by every command: the kubectl connection flags and the streams.
type RootOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags
	Streams     genericiooptions.IOStreams
}

// NewRootCommand builds the kubectl llm command tree.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:           "kubectl-llm",
		Short:         "Deploy, roll out and watch LLM model servings on LeaderWorkerSet groups",
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl llm"},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	o := &RootOptions{ConfigFlags: genericclioptions.NewConfigFlags(true), Streams: streams}
	o.ConfigFlags.AddFlags(root.PersistentFlags())
	root.AddCommand(newVersionCommand(o))
	root.AddCommand(newOperatorCommand(o))
	return root
}
