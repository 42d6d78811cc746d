package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-llm/kubectl-llm/pkg/status"
	"github.com/kubectl-llm/kubectl-llm/pkg/tui"
)

// WatchOptions open the live view of a serving (or of every serving in the namespace).
type WatchOptions struct {
	*RootOptions
	servingTarget
	NoTUI bool
}

func newWatchCommand(root *RootOptions) *cobra.Command {
	o := &WatchOptions{RootOptions: root}
	cmd := &cobra.Command{
		Use:   "watch [NAME]",
		Short: "Live view of a serving's groups (every serving of the namespace without NAME)",
		Long: `Show a serving live: a header (model, image, revisions, phase, endpoint), one row per group
with one cell per pod (leader first) and the reason of each unready pod, the rollout progress with
the partition and surge groups, and the latest events.

Keys: arrows/jk move, enter opens a group's pods, r restarts the selected group, R the serving,
p pauses/resumes, P promotes a canary, A aborts it, / filters, ? help, q quits. Actions ask for
confirmation and do what the kubectl llm commands of the same name do.

When stdin or stdout is not a terminal (a script, a pipe, a file, </dev/null), or with --no-tui, it
prints one plain line per change instead, until it is stopped (Ctrl-C, SIGTERM).`,
		Example: `  kubectl llm watch qwen
  kubectl llm watch              # every serving of the namespace; enter opens one
  kubectl llm watch qwen --no-tui`,
		ValidArgsFunction: completeServingNames(root),
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
	cmd.Flags().BoolVar(&o.NoTUI, "no-tui", false, "Print plain change lines instead of the live view")
	return cmd
}

// Complete reads the optional NAME and resolves the client.
func (o *WatchOptions) Complete(_ *cobra.Command, args []string) error {
	return o.complete(o.RootOptions, args)
}

// Validate checks there is at most one NAME.
func (o *WatchOptions) Validate() error {
	if len(o.args) > 1 {
		return fmt.Errorf("expected at most one NAME, got %d arguments (%s): kubectl llm watch [NAME]", len(o.args), strings.Join(o.args, " "))
	}
	return nil
}

// Run shows the live view, or plain lines off a terminal.
func (o *WatchOptions) Run(ctx context.Context) error {
	if o.Name != "" {
		if _, err := getServing(ctx, o.client, o.namespace, o.Name, o.host()); err != nil {
			return err
		}
	}
	cfg := tui.Config{Client: o.client, Namespace: o.namespace, Name: o.Name, In: o.Streams.In, Out: o.Streams.Out,
		Clock: o.Clock.Now, Actions: commandActions{root: o.RootOptions, client: o.client}}
	if o.NoTUI || !o.interactive() {
		return o.explain(tui.RunPlain(ctx, cfg))
	}
	quietLogs()
	return o.explain(tui.Run(ctx, cfg))
}

func (o *WatchOptions) explain(err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return nil
	}
	return explain(err, o.host())
}

// quietLogs keeps client libraries from writing log lines over the live view.
func quietLogs() { ctrl.SetLogger(logr.Discard()) }

// isTerminal reports whether a stream is a terminal, by asking the terminal driver (isatty) about
// its file descriptor. Being a character device is not enough: /dev/null is one.
func isTerminal(stream any) bool {
	f, ok := stream.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// interactive reports whether the live view can run: it reads keys from stdin and draws on
// stdout, so both must be terminals. A script (stdin closed or /dev/null, stdout redirected) gets
// the plain lines.
func (o *RootOptions) interactive() bool {
	return isTerminal(o.Streams.In) && isTerminal(o.Streams.Out)
}

// commandActions carry out the live view's keys with the very commands of the same name
// (restart, restart --group, rollout pause/resume, canary promote/abort), their output dropped.
type commandActions struct {
	root   *RootOptions
	client client.WithWatch
}

var _ tui.Actions = commandActions{}

// NewCommandActions are the live view's actions carried out by the commands of the same name.
func NewCommandActions(root *RootOptions, c client.WithWatch) tui.Actions {
	return commandActions{root: root, client: c}
}

// target is the serving an action works on, through the view's client.
func (a commandActions) target(ns, name string) servingTarget {
	return servingTarget{Name: name, args: []string{name}, client: a.client, namespace: ns}
}

func (a commandActions) quiet() *RootOptions {
	r := *a.root
	r.Streams = genericiooptions.IOStreams{In: a.root.Streams.In, Out: io.Discard, ErrOut: io.Discard}
	return &r
}

func (a commandActions) RestartGroup(ctx context.Context, ns, name string, group int) error {
	o := &RestartOptions{RootOptions: a.quiet(), servingTarget: a.target(ns, name), Group: int32(group),
		set: func(f string) bool { return f == "group" }}
	if err := o.Validate(); err != nil {
		return err
	}
	return o.Run(ctx)
}

func (a commandActions) Restart(ctx context.Context, ns, name string) error {
	o := &RestartOptions{RootOptions: a.quiet(), servingTarget: a.target(ns, name), set: func(string) bool { return false }}
	return o.Run(ctx)
}

func (a commandActions) SetPaused(ctx context.Context, ns, name string, paused bool) error {
	o := &RolloutPauseOptions{RootOptions: a.quiet(), servingTarget: a.target(ns, name), Pause: paused}
	return o.Run(ctx)
}

func (a commandActions) Promote(ctx context.Context, ns, name string) error {
	o := &CanaryDecisionOptions{RootOptions: a.quiet(), servingTarget: a.target(ns, name), Promote: true}
	return o.Run(ctx)
}

func (a commandActions) Abort(ctx context.Context, ns, name string) error {
	o := &CanaryDecisionOptions{RootOptions: a.quiet(), servingTarget: a.target(ns, name), Promote: false}
	return o.Run(ctx)
}

// rolloutStatusTUI waits for a rollout in the live view, for `rollout status` on a terminal.
func (o *RolloutStatusOptions) rolloutStatusTUI(ctx context.Context) error {
	cfg := tui.Config{Client: o.client, Namespace: o.namespace, Name: o.Name, In: o.Streams.In, Out: o.Streams.Out,
		Clock: o.Clock.Now, Actions: commandActions{root: o.RootOptions, client: o.client}, UntilDone: true}
	quietLogs()
	err := tui.Run(ctx, cfg)
	var failed *status.RolloutFailedError
	if errors.As(err, &failed) {
		return &exitError{code: ExitRolloutFailed, err: err}
	}
	if err != nil && ctx.Err() != nil {
		return &exitError{code: ExitTimedOut, err: fmt.Errorf("timed out after %s waiting for the rollout of serving %q", o.Timeout, o.Name)}
	}
	return err
}
