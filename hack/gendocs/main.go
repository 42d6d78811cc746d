// Command gendocs writes docs/commands.md from the kubectl llm command tree:
//
//	go run ./hack/gendocs
//
// pkg/cli's TestCommandsDocIsCurrent fails when the committed page is stale.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubectl-llm/kubectl-llm/pkg/cli"
)

func main() {
	out := filepath.Join("docs", "commands.md")
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	var b bytes.Buffer
	if err := cli.WriteCommandsMarkdown(&b); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}
