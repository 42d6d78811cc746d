package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/watch"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// RolloutStatusOptions wait for a rollout like kubectl rollout status.
type RolloutStatusOptions struct {
	*RootOptions
	servingTarget
	Watch   bool
	Timeout time.Duration
	NoTUI   bool
}

func newRolloutStatusCommand(root *RootOptions) *cobra.Command {
	o := &RolloutStatusOptions{RootOptions: root}
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Wait for a rollout to finish, like kubectl rollout status",
		Long: `Print the progress of a serving's rollout and, with --watch (the default), wait until it is done
by watching the serving (no polling). On a terminal (stdin and stdout both terminals) it waits in
the live view (kubectl llm watch), which closes when the rollout is done; --no-tui, or a stdin or
stdout that is not a terminal (a script, a pipe, >/dev/null), prints one line per change.

Done means the Progressing condition of the current generation says RolloutComplete, or CanaryHeld
for a rollout held at its partition (a canary).

Exit codes:
  0  the rollout is done (or, with --watch=false, the status was printed)
  1  an error (serving not found, cluster unreachable...)
  2  the rollout failed: progress deadline exceeded, or a spec the operator cannot serve
  3  --timeout passed before the rollout finished`,
		Example: `  kubectl llm rollout status qwen
  kubectl llm rollout status qwen --timeout 30m
  kubectl llm rollout status qwen --watch=false`,
		ValidArgsFunction: completeServingNames(root),
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", true, "Wait until the rollout is done; --watch=false prints the status once")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "How long to wait before giving up (exit 3); 0 waits forever")
	cmd.Flags().BoolVar(&o.NoTUI, "no-tui", false, "On a terminal, print status lines instead of the live view")
	return cmd
}

// Complete reads NAME and resolves the client.
func (o *RolloutStatusOptions) Complete(_ *cobra.Command, args []string) error {
	return o.complete(o.RootOptions, args)
}

// Validate checks --timeout.
func (o *RolloutStatusOptions) Validate() error {
	if err := o.validateOneName("kubectl llm rollout status NAME"); err != nil {
		return err
	}
	if o.Timeout < 0 {
		return fmt.Errorf("--timeout must be 0 (wait forever) or a positive duration such as 10m, not %s", o.Timeout)
	}
	return nil
}

// Run prints each new status sentence until the rollout is done, failed or the timeout passed.
func (o *RolloutStatusOptions) Run(ctx context.Context) error {
	host := o.host()
	waitCtx, cancel := ctx, context.CancelFunc(func() {})
	if o.Timeout > 0 {
		waitCtx, cancel = context.WithTimeout(ctx, o.Timeout)
	}
	defer cancel()
	if o.Watch && !o.NoTUI && o.interactive() {
		if _, err := getServing(ctx, o.client, o.namespace, o.Name, host); err != nil {
			return err
		}
		return o.rolloutStatusTUI(waitCtx)
	}

	last := ""
	evaluate := func(ms *v1.ModelServing) (bool, error) {
		msg, done, err := status.RolloutStatus(ms)
		if err != nil {
			return true, &exitError{code: ExitRolloutFailed, err: err}
		}
		if msg != last {
			fmt.Fprint(o.Streams.Out, msg)
			last = msg
		}
		return done || !o.Watch, nil
	}
	onList := func(items []servingItem) (bool, error) {
		if len(items) == 0 {
			return true, notFound(ctx, o.client, o.namespace, o.Name, host)
		}
		if items[0].Undecodable {
			return true, items[0].Err
		}
		return evaluate(&items[0].ModelServing)
	}
	onEvent := func(t watch.EventType, it servingItem) (bool, error) {
		if t == watch.Deleted {
			return true, fmt.Errorf("serving %q was deleted while waiting for its rollout", o.Name)
		}
		if it.Undecodable {
			return true, it.Err
		}
		return evaluate(&it.ModelServing)
	}
	err := watchServings(waitCtx, o.client, o.namespace, o.Name, onList, onEvent)
	if err != nil && waitCtx.Err() != nil && ctx.Err() == nil {
		return &exitError{code: ExitTimedOut, err: fmt.Errorf("timed out after %s waiting for the rollout of serving %q: %s",
			o.Timeout, o.Name, strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(last), "Waiting for rollout to finish: "), "..."))}
	}
	var ec *exitError
	if errors.As(err, &ec) {
		return err
	}
	return explain(err, host)
}
