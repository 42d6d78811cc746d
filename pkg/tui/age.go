package tui

import (
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// Age is how long before now t was, as kubectl's AGE column says it (2m30s, 5h, 12d), and
// "<unknown>" for a time never set. It is the one age formatter of the view and the CLI.
func Age(now, t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}
