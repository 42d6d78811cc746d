package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestColourOnlyOnATerminalAndNeverWithNoColor(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for _, tc := range []struct {
		name    string
		o       *RootOptions
		colored bool
	}{
		{"a buffer is not a terminal", &RootOptions{}, false},
		{"a regular file is not a terminal", &RootOptions{}, false},
		{"/dev/null is not a terminal", &RootOptions{}, false},
		{"--no-color", &RootOptions{NoColor: true}, false},
	} {
		tc.o.Streams.Out = &bytes.Buffer{}
		switch tc.name {
		case "a regular file is not a terminal":
			tc.o.Streams.Out = f
		case "/dev/null is not a terminal":
			tc.o.Streams.Out = devNull
		}
		if got := newColors(tc.o, tc.o.Streams.Out).state("Failing"); got != "Failing" {
			t.Errorf("%s: state painted %q", tc.name, got)
		}
	}
	if got := (colors{on: true}).state("Failing"); got != "\x1b[31mFailing\x1b[0m" {
		t.Errorf("on a terminal Failing is %q, want it red", got)
	}
}

func TestRenderTableAlignsColouredCellsByWhatIsVisible(t *testing.T) {
	c := colors{on: true}
	var b bytes.Buffer
	renderTable(&b, [][]string{{"NAME", "PHASE", "AGE"}, {"qwen", c.state("Ready"), "5m"}, {"llama-70b", c.state("Progressing"), "1h"}}, nil)
	want := "NAME        PHASE         AGE\n" +
		"qwen        \x1b[32mReady\x1b[0m         5m\n" +
		"llama-70b   \x1b[33mProgressing\x1b[0m   1h\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

// TestPreflightChecksAlignWhenColoured: the RESULT column is coloured on a terminal; the DETAIL
// column starts at the same place on every line as the terminal shows it (without the codes).
func TestPreflightChecksAlignWhenColoured(t *testing.T) {
	rep := preflightReport{Serving: "ns/qwen", Groups: 1, GroupSize: 1, Checks: []check{
		{Name: "GPU fit", Result: "ok", Detail: "fits"},
		{Name: "LeaderWorkerSet API", Result: "FAIL", Detail: "not installed"},
		{Name: "ModelServing API", Result: "unknown", Detail: "cannot read"},
	}}
	var b bytes.Buffer
	if err := printPreflight(&b, rep, colors{on: true}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	checks := lines[len(lines)-4:]
	col := -1
	for _, l := range checks {
		plain := ansi.Strip(l)
		at := strings.LastIndex(plain, "   ") + 3
		if col == -1 {
			col = at
		}
		if at != col {
			t.Errorf("the DETAIL column starts at %d in %q, at %d above:\n%s", at, plain, col, b.String())
		}
	}
	if !strings.Contains(b.String(), "\x1b[31mFAIL\x1b[0m") {
		t.Errorf("FAIL is not coloured:\n%q", b.String())
	}
}

func TestCloseNames(t *testing.T) {
	names := []string{"qwen", "qwen-large", "llama", "mistral", "qwen3"}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"qwne", []string{"qwen", "qwen3"}},
		{"qwen-larg", []string{"qwen-large", "qwen"}}, // closest first; a prefix counts too
		{"lama", []string{"llama"}},
		{"gemma", nil},
	} {
		got := closeNames(tc.name, names)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
		}
	}
}
