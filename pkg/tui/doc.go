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
// It imports the API, pkg/naming (the selector, image and endpoint it shows) and pkg/status; it
// must not import pkg/operator (a view reads what the operator reported, in the serving's status,
// and never recomputes it) nor pkg/cli (which imports it). test/layers enforces this.
package tui
