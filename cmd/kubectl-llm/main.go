// Command kubectl-llm is the kubectl plugin (kubectl llm …) and the operator (kubectl llm operator).
package main

import (
	"os"

	"github.com/kubectl-llm/kubectl-llm/pkg/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
