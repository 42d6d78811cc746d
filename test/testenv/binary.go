package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildBinary builds cmd/kubectl-llm into dir and returns its path, so tests run the program the
// way a user or a script does: its own process, its own file descriptors, its exit code.
func BuildBinary(dir string) (string, error) {
	path := filepath.Join(dir, "kubectl-llm")
	build := exec.Command("go", "build", "-o", path, "./cmd/kubectl-llm")
	build.Dir, build.Stdout, build.Stderr = RepoRoot(), os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build kubectl-llm: %w", err)
	}
	return path, nil
}
