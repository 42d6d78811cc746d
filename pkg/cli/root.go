// Package cli holds the kubectl llm commands: one file per command, each an Options struct with
// Complete (resolve: the servingTarget embed of target.go gives NAME, client and namespace),
// Validate (arguments and flags only; what the CRD's schema and CEL rules judge is left to the
// API server, whose message is the message) and Run. Shared by the commands, one concern a file:
// errors.go (exit codes, messages a person can act on), lookup.go (a serving by name, patches),
// watch.go (waits through watchtools.UntilWithSync), printobj.go (-o through cli-runtime's
// PrintFlags), table.go (the one table writer), colors.go, apicheck.go (is an API served).
// It may import api (and its generated apply configurations), config, naming, revision, scheme,
// status and tui; only operator.go, the file of the `operator` command, imports pkg/operator (to
// run it).
// The update revision it shows is the serving's status.updateRevision, never a name it hashes;
// it compares revisions by content (revision.Same). Nothing imports it but cmd. test/layers
// enforces this.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	return Execute(context.Background(), cmd, errOut)
}

// Execute runs a command tree, prints the error a command returned and turns it into an exit code:
// 0 ok, 1 error, or the code of an error implementing ExitCoder (see `rollout status`).
func Execute(ctx context.Context, cmd *cobra.Command, errOut io.Writer) int {
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(errOut, "error:", err)
		var ec ExitCoder
		if errors.As(err, &ec) {
			return ec.ExitCode()
		}
		return 1
	}
	return 0
}

// RootOptions are shared by every command: the kubectl connection flags, the streams, the clock
// ages are measured against, and (for tests) a ready client.
type RootOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags
	Streams     genericiooptions.IOStreams
	// Clock is what ages, restart ids and "for 5m" are measured against; tests fix it.
	Clock clock.PassiveClock
	// Client, when set, is used instead of one built from ConfigFlags.
	Client client.WithWatch
	// NoColor turns colour off; colour is only ever used when Out is a terminal.
	NoColor bool
}

// NewRootOptions are the options of a real invocation: flags from the command line, the wall clock.
func NewRootOptions(streams genericiooptions.IOStreams) *RootOptions {
	return &RootOptions{ConfigFlags: genericclioptions.NewConfigFlags(true), Streams: streams, Clock: clock.RealClock{}}
}

// NewRootCommand builds the kubectl llm command tree.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return NewRootCommandWith(NewRootOptions(streams))
}

// NewRootCommandWith builds the command tree around the given options (tests fix the clock).
func NewRootCommandWith(o *RootOptions) *cobra.Command {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.ConfigFlags == nil {
		o.ConfigFlags = genericclioptions.NewConfigFlags(true)
	}
	streams := o.Streams
	root := &cobra.Command{
		Use:   "kubectl-llm",
		Short: "Deploy, roll out and watch LLM model servings on LeaderWorkerSet groups",
		Long: `kubectl llm deploys, rolls out and inspects LLM model servings (ModelServing objects) that run
on LeaderWorkerSet groups: a leader pod and groupSize-1 workers per replica.

Exit codes, the same for every command:
  0  success
  1  an error: bad flags or arguments, a serving that does not exist, a request the API server
     refused (admission rules and policies, RBAC), a cluster that cannot be reached; stderr says
     which in one line starting with "error: "
  2  a rollout failed (rollout status): progress deadline exceeded, or a spec the operator cannot serve
  3  a wait ran out of time: rollout status --timeout, install --wait --timeout, uninstall --timeout

In scripts and pipelines: stdout carries only what was asked for (the table, the status lines, the
-o yaml|json|name output); errors, warnings and notes go to stderr. The live view (watch, and
rollout status) starts only when stdin and stdout are both terminals; otherwise, or with --no-tui,
they print plain lines, one per change. Colour is used only on a terminal (not TERM=dumb) or with
CLICOLOR_FORCE=1, and never with --no-color or NO_COLOR set. No command asks a question or reads
stdin, except deploy -f -. Every command that changes a serving takes -o yaml|json|name (or
kubectl's jsonpath and go-template formats) to print it as it is after the change. See
docs/automation.md for a CI pipeline.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl llm"},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	o.ConfigFlags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().BoolVar(&o.NoColor, "no-color", o.NoColor, "Never colour the output (colour is only used on a terminal)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\nSee '%s --help'.", err, c.CommandPath())
	})
	root.AddCommand(
		newDeployCommand(o),
		newGetCommand(o),
		newDescribeCommand(o),
		newRolloutCommand(o),
		newSetCommand(o),
		newScaleCommand(o),
		newCanaryCommand(o),
		newRestartCommand(o),
		newPreflightCommand(o),
		newWatchCommand(o),
		newInstallCommand(o),
		newUninstallCommand(o),
		newVersionCommand(o),
		newOperatorCommand(o),
	)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Long += `

Serving names complete from the cluster (the namespace of -n, or of the kubeconfig context).
To complete "kubectl llm ..." through kubectl (1.26 and later), put an executable named
kubectl_complete-llm on your PATH that runs: kubectl-llm __complete "$@"`
		}
	}
	return root
}
