package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLiveViewDocShowsTheGoldenScreens keeps docs/live-view.md equal to the screens the tests check.
func TestLiveViewDocShowsTheGoldenScreens(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "live-view.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"TestDemoServing", "TestRollingUpdateWithPartition", "TestPodFailingWithReason"} {
		screen, err := os.ReadFile(filepath.Join("testdata", name+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "```text\n"+string(screen)+"\n```") {
			t.Errorf("docs/live-view.md does not show the screen of %s: copy testdata/%s.golden into it", name, name)
		}
	}
}
