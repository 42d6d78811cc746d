package main

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The operator's resident memory holds most of the binary's code (the kernel maps the pages
// around each one touched), so code linked for nothing costs every operator process memory.
// client-go's informer factory and its whole clientset link an informer, lister and typed client
// of every built-in API: about 17 MiB of the binary, 7 MiB of the operator's RSS. The operator
// uses a few typed groups (operator.Kube) and its own informers instead; this keeps it so.
func TestTheBinaryLinksNeitherClientGosInformerFactoryNorItsWholeClientset(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kubectl-llm")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(build.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	unwanted := []string{
		"k8s.io/client-go/informers.",              // the informer factory and every group's informers
		"k8s.io/client-go/kubernetes.NewForConfig", // the whole clientset (NewForConfig, NewForConfigAndClient…)
		"k8s.io/client-go/kubernetes/typed/apps/v1.",
	}
	found := map[string]string{}
	for _, s := range syms {
		for _, u := range unwanted {
			if _, seen := found[u]; !seen && strings.HasPrefix(s.Name, u) {
				found[u] = s.Name
			}
		}
	}
	for u, name := range found {
		t.Errorf("the binary links %s… (%s): use operator.NewKube and informers of their own, not client-go's clientset or informer factory", u, name)
	}
	if len(syms) < 1000 {
		t.Fatalf("only %d symbols in the binary: the check reads nothing", len(syms))
	}
}
