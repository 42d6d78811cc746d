package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/cli"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// TestCommandsDocIsCurrent fails when docs/commands.md no longer matches the command tree;
// refresh it with go run ./hack/gendocs (or go test ./pkg/cli/ -update).
func TestCommandsDocIsCurrent(t *testing.T) {
	var b bytes.Buffer
	if err := cli.WriteCommandsMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "commands.md")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s (generate it with go run ./hack/gendocs): %v", path, err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("docs/commands.md is stale; run go run ./hack/gendocs (-committed +generated):\n%s", diff)
	}
	for _, cmd := range []string{"## kubectl llm deploy", "## kubectl llm rollout status", "## kubectl llm canary promote", "## kubectl llm completion bash"} {
		if !strings.Contains(b.String(), cmd+"\n") {
			t.Errorf("docs lack %q", cmd)
		}
	}
}

func TestCompletionOfServingNames(t *testing.T) {
	ns := namespace(t, "completion")
	for _, name := range []string{"qwen", "qwen-large", "llama"} {
		seedServing(t, ns, fixtures.Serving(name, ns))
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "-n", ns, "describe", "qw"}, "qwen\nqwen-large\n:4\n"},
		{[]string{"__complete", "-n", ns, "rollout", "status", ""}, "llama\nqwen\nqwen-large\n:4\n"},
		{[]string{"__complete", "-n", ns, "describe", "qwen", ""}, ":4\n"}, // one NAME only
		{[]string{"__complete", "-n", ns, "deploy", "q", "--engine", ""}, "vllm\nsglang\ncustom\n:4\n"},
	} {
		r := run(t, time.Now(), tc.args...)
		expectCode(t, r, 0)
		if r.Out != tc.want {
			t.Errorf("%v completed %q, want %q", tc.args, r.Out, tc.want)
		}
	}
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		r := run(t, time.Now(), "completion", shell)
		expectCode(t, r, 0)
		if !strings.Contains(r.Out, "kubectl-llm") || len(r.Out) < 500 {
			t.Errorf("completion %s printed %d bytes", shell, len(r.Out))
		}
	}
}

// TestGetWatchPrintsALinePerChange lists, then prints a line when the operator writes a status.
func TestGetWatchPrintsALinePerChange(t *testing.T) {
	ns := namespace(t, "get-watch")
	ms := seedServing(t, ns, fixtures.Serving("qwen", ns).Replicas(2))
	now := clockAfter(t, ms)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, done := start(ctx, now, "-n", ns, "get", "-w")
	waitFor(t, out, "qwen   Qwen/Qwen3-0.6B")
	writeStatus(t, ms, v1.ModelServingStatus{Phase: v1.PhaseProgressing, Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 2, ReadyGroups: "1/2"})
	writeStatus(t, ms, v1.ModelServingStatus{Phase: v1.PhaseReady, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, ReadyGroups: "2/2"})
	waitFor(t, out, "Ready")
	cancel()
	r := <-done
	expectCode(t, r, 0)
	golden(t, "get-watch", r.Out)
}
