package cli

import (
	"io"
	"os"
)

// colors paints words only on a terminal and only without --no-color or NO_COLOR.
type colors struct{ on bool }

// newColors are the colours for what a command writes to w (its Out or its ErrOut).
func newColors(o *RootOptions, w io.Writer) colors {
	if o.NoColor || os.Getenv("NO_COLOR") != "" {
		return colors{}
	}
	return colors{on: isTerminal(w)}
}

func (c colors) paint(code, s string) string {
	if !c.on || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// state colours a state word: green when good, yellow while waiting, red when failing.
func (c colors) state(s string) string {
	switch s {
	case "Ready", "True", "ok", "current", "Normal":
		return c.paint("32", s)
	case "Failed", "Degraded", "Failing", "FAIL", "Warning", "Missing":
		return c.paint("31", s)
	case "":
		return s
	default:
		return c.paint("33", s)
	}
}
