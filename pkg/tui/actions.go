package tui

import (
	"context"
	"errors"
)

// Actions are the writes the live view can make: the CLI passes the commands of the same name
// (`restart`, `restart --group`, `rollout pause/resume`, `canary promote/abort`), so the view
// never writes to the cluster any other way.
type Actions interface {
	// RestartGroup recreates group `group` by deleting its leader pod (LWS recreates the group).
	RestartGroup(ctx context.Context, namespace, name string, group int) error
	// Restart restarts every group through the rollout rules with a new spec.restart.id.
	Restart(ctx context.Context, namespace, name string) error
	// SetPaused pauses or resumes the rollout (spec.rollout.paused).
	SetPaused(ctx context.Context, namespace, name string, paused bool) error
	// Promote moves every group to the update revision (spec.rollout.partition 0).
	Promote(ctx context.Context, namespace, name string) error
	// Abort writes the current revision's spec back and sets partition 0.
	Abort(ctx context.Context, namespace, name string) error
}

// noActions answers every key with the reason nothing can be done: the view was opened
// without the commands' actions (Config.Actions).
type noActions struct{}

var errNoActions = errors.New("actions are not available in this view")

func (noActions) RestartGroup(context.Context, string, string, int) error { return errNoActions }
func (noActions) Restart(context.Context, string, string) error           { return errNoActions }
func (noActions) SetPaused(context.Context, string, string, bool) error   { return errNoActions }
func (noActions) Promote(context.Context, string, string) error           { return errNoActions }
func (noActions) Abort(context.Context, string, string) error             { return errNoActions }
