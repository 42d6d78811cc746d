package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// openPTY is the terminal end of a pseudo-terminal.
func openPTY(t *testing.T) *os.File {
	_, tty := testenv.OpenPTY(t)
	return tty
}

func TestOnlyATerminalIsATerminal(t *testing.T) {
	tty := openPTY(t)
	devNull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()

	for _, tc := range []struct {
		name   string
		stream any
		want   bool
	}{
		{"a pseudo-terminal", tty, true},
		{"/dev/null, a character device", devNull, false},
		{"a pipe", w, false},
		{"a regular file", file, false},
		{"a buffer", &bytes.Buffer{}, false},
		{"nothing", nil, false},
	} {
		if got := isTerminal(tc.stream); got != tc.want {
			t.Errorf("%s: isTerminal = %v, want %v", tc.name, got, tc.want)
		}
	}

	for _, tc := range []struct {
		name    string
		in, out *os.File
		want    bool
	}{
		{"stdin and stdout on a terminal", tty, tty, true},
		{"stdin /dev/null", devNull, tty, false},
		{"stdout /dev/null", tty, devNull, false},
		{"stdout a pipe", tty, w, false},
	} {
		o := &RootOptions{}
		o.Streams.In, o.Streams.Out = tc.in, tc.out
		if got := o.interactive(); got != tc.want {
			t.Errorf("%s: interactive = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestColourOnATerminalUnlessTurnedOff(t *testing.T) {
	tty := openPTY(t)
	t.Setenv("NO_COLOR", "")
	t.Setenv("CLICOLOR_FORCE", "")
	t.Setenv("TERM", "xterm-256color")
	if !newColors(&RootOptions{}, tty).on {
		t.Error("no colour on a terminal")
	}
	t.Setenv("TERM", "dumb")
	if newColors(&RootOptions{}, tty).on {
		t.Error("colour on a terminal with TERM=dumb")
	}
	t.Setenv("TERM", "xterm-256color")
	if newColors(&RootOptions{NoColor: true}, tty).on {
		t.Error("colour on a terminal with --no-color")
	}
	t.Setenv("NO_COLOR", "1")
	if newColors(&RootOptions{}, tty).on {
		t.Error("colour on a terminal with NO_COLOR=1")
	}
}
