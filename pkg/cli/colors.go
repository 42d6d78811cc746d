package cli

import (
	"io"
	"os"

	"github.com/charmbracelet/colorprofile"
)

// colors paints words only on a terminal that shows colour (or with CLICOLOR_FORCE), never with
// --no-color or NO_COLOR.
type colors struct{ on bool }

// newColors are the colours for what a command writes to w (its Out or its ErrOut): what
// colorprofile detects for w (a terminal, not TERM=dumb; CLICOLOR_FORCE=1 forces colour), off
// with --no-color or any NO_COLOR value (no-color.org: any non-empty value, which colorprofile
// reads as a boolean).
func newColors(o *RootOptions, w io.Writer) colors {
	if o.NoColor || os.Getenv("NO_COLOR") != "" {
		return colors{}
	}
	return colors{on: colorprofile.Detect(w, os.Environ()) >= colorprofile.ANSI}
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
