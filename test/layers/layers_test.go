// Package layers holds the test that keeps the import graph the way the design draws it:
// api ← naming/revision/scheme ← status ← operator, and status ← tui ← cli ← cmd, with no view
// importing the operator (pkg/cli only in the file of the `operator` command).
package layers

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/kubectl-llm/kubectl-llm/"

// allowed are the packages of this module each package may import (its tests may also import
// the test helpers under test/). A package missing here fails the test: where a new package sits
// in the graph is a decision, written down here.
var allowed = map[string][]string{
	"api/v1alpha1":         nil,
	"config":               nil,
	"config/argocd":        nil,
	"pkg/naming":           {"api/v1alpha1"},
	"pkg/scheme":           {"api/v1alpha1"},
	"pkg/revision":         {"api/v1alpha1", "pkg/naming"},
	"pkg/status":           {"api/v1alpha1", "pkg/naming", "pkg/revision"},
	"pkg/operator":         {"api/v1alpha1", "pkg/naming", "pkg/revision", "pkg/scheme", "pkg/status", "pkg/operator/lwsrbac"},
	"pkg/operator/lwsrbac": nil,
	"pkg/tui":              {"api/v1alpha1", "pkg/naming", "pkg/revision", "pkg/scheme", "pkg/status"},
	"pkg/cli":              {"api/v1alpha1", "config", "pkg/naming", "pkg/revision", "pkg/scheme", "pkg/status", "pkg/tui"},
	"cmd/kubectl-llm":      {"pkg/cli"},
}

// fileExceptions are single files allowed one more import: the `operator` command runs the
// operator, so it is the one file of the CLI that imports it.
var fileExceptions = map[string][]string{
	"pkg/cli/operator.go": {"pkg/operator"},
}

// testHelpers may be imported by any package's tests.
var testHelpers = []string{"test/fixtures", "test/testenv", "test/sim"}

func TestImportsFollowTheLayers(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	checked := 0
	for _, top := range []string{"api", "cmd", "config", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(p, ".go") {
				return nil
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			pkg := path.Dir(rel)
			if _, known := allowed[pkg]; !known {
				t.Errorf("%s: package %s is not in the layer table of test/layers: add it where it belongs", rel, pkg)
				return nil
			}
			f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			checked++
			var imports []string
			for _, imp := range f.Imports {
				ip, _ := strconv.Unquote(imp.Path.Value)
				imports = append(imports, ip)
			}
			for _, v := range violations(rel, imports) {
				t.Error(v)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d files: is the walk rooted at the repository?", checked)
	}
}

// violations are the imports of one file (rel: its path in the repository) that break the layers.
func violations(rel string, imports []string) []string {
	pkg := path.Dir(rel)
	ok := allowed[pkg]
	var out []string
	for _, ip := range imports {
		dep, ours := strings.CutPrefix(ip, module)
		if !ours || dep == pkg {
			continue
		}
		if slices.Contains(ok, dep) || slices.Contains(fileExceptions[rel], dep) ||
			(strings.HasSuffix(rel, "_test.go") && slices.Contains(testHelpers, dep)) {
			continue
		}
		out = append(out, fmt.Sprintf("%s imports %s: %s may import only %v (DESIGN: layout and dependency direction)", rel, dep, pkg, ok))
	}
	return out
}

// The rule can fail: a view importing the operator, or a lower layer a higher one, is caught.
func TestViolationsCatchesAViewImportingTheOperator(t *testing.T) {
	op, cli, tui := module+"pkg/operator", module+"pkg/cli", module+"pkg/tui"
	for _, tc := range []struct {
		file    string
		imports []string
		bad     bool
	}{
		{"pkg/tui/view.go", []string{op}, true},
		{"pkg/tui/view_test.go", []string{op}, true},
		{"pkg/cli/describe.go", []string{op}, true},
		{"pkg/cli/describe_test.go", []string{op}, true},
		{"pkg/cli/operator.go", []string{op}, false},
		{"pkg/status/summary.go", []string{tui}, true},
		{"pkg/operator/manager.go", []string{cli}, true},
		{"pkg/revision/revision.go", []string{module + "pkg/status"}, true},
		{"pkg/cli/get.go", []string{tui, module + "pkg/revision", "fmt"}, false},
		{"pkg/tui/view_test.go", []string{module + "test/fixtures"}, false},
		{"pkg/tui/view.go", []string{module + "test/fixtures"}, true},
	} {
		if got := len(violations(tc.file, tc.imports)) > 0; got != tc.bad {
			t.Errorf("%s importing %v: violation %v, want %v", tc.file, tc.imports, got, tc.bad)
		}
	}
}
