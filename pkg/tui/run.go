package tui

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Config is what `kubectl llm watch` hands the view.
type Config struct {
	// Client reads through watches; its scheme must know ModelServing.
	Client client.WithWatch
	// Namespace of the serving (or of the list).
	Namespace string
	// Name of the serving; empty shows every serving of the namespace as a list to open.
	Name string
	// In and Out are the terminal (nil: stdin and stdout).
	In  io.Reader
	Out io.Writer
	// Clock gives the time (nil: time.Now).
	Clock func() time.Time
	// Actions carry out the keys r, R, p, P and A (nil: the keys say no action is available).
	Actions Actions
	// UntilDone quits when the rollout is done or failed, as `rollout status --watch` does;
	// Run then returns the rollout's error (a *status.RolloutFailedError).
	UntilDone bool
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.In == nil {
		c.In = os.Stdin
	}
	if c.Out == nil {
		c.Out = os.Stdout
	}
	if c.Actions == nil {
		c.Actions = noActions{}
	}
	return c
}

// Run shows the live view on the terminal until the user quits (nil), until the rollout is done
// with UntilDone (nil, or the rollout's *status.RolloutFailedError), or until ctx ends (ctx.Err()).
func Run(ctx context.Context, cfg Config) error {
	if cfg.Client == nil {
		return errors.New("the live view needs a client")
	}
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the watches
	p := tea.NewProgram(NewModel(ctx, cfg), tea.WithContext(ctx), tea.WithInput(cfg.In), tea.WithOutput(cfg.Out))
	final, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		// Ended from outside (a timeout, a signal): say so, so that `rollout status --watch
		// --timeout` can tell a timeout from a finished rollout.
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	if m, ok := final.(Model); ok {
		return m.Result()
	}
	return nil
}
