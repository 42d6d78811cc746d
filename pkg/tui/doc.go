// Package tui is the live view of `kubectl llm watch`: a Bubble Tea program that shows the
// groups of one ModelServing (leader first, one cell per pod), its rollout and its latest
// events, or every serving of a namespace as a list; and RunPlain, the same changes as plain
// lines for a stdout that is not a terminal.
//
// It owns the screen, its keys and the watch streams that feed it. It does not decide
// readiness: pod states, group readiness, reasons and rollout progress come from pkg/status,
// the same code `describe` and `rollout status` print. It writes to the cluster only through
// Actions, which do what the CLI commands do.
//
// The model is a value (model.go): Update switches on small messages and returns the model and
// Cmds; every side effect (opening, closing and re-reading a watch stream, an action's writes)
// runs in a Cmd, and the model keeps no context (a stream's lifetime is the source's; an action
// gets its own deadline). View only renders, one file per screen: view_serving.go (a serving's
// groups), view_pods.go (one group's pods), view_list.go (a namespace's servings), view_help.go
// (keys), around the frame in view.go. Age is the one age formatter, for the CLI too.
//
// It imports the API, pkg/naming (the selector, image and endpoint it shows) and pkg/status; it
// must not import pkg/operator (a view reads what the operator reported, in the serving's status,
// and never recomputes it) nor pkg/cli (which imports it). test/layers enforces this.
package tui
