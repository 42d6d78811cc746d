// Package layers holds the test that keeps the import graph the way the design draws it:
// api ← naming/revision/scheme/roleplan ← status ← operator, and status ← tui ← cli ← cmd, with no view
// importing the operator (pkg/cli only in the file of the `operator` command); and that the
// views never name a revision themselves (they read status.updateRevision).
package layers

import (
	"fmt"
	"go/ast"
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
	"api/v1alpha1": nil,
	// The apply configurations controller-gen generates for the API (make generate).
	"api/v1alpha1/applyconfiguration":              {"api/v1alpha1", "api/v1alpha1/applyconfiguration/api/v1alpha1", "api/v1alpha1/applyconfiguration/internal"},
	"api/v1alpha1/applyconfiguration/api/v1alpha1": {"api/v1alpha1", "api/v1alpha1/applyconfiguration/internal"},
	"api/v1alpha1/applyconfiguration/internal":     nil,
	"config":               nil,
	"config/argocd":        nil,
	"pkg/naming":           {"api/v1alpha1"},
	"pkg/scheme":           {"api/v1alpha1"},
	"pkg/revision":         {"api/v1alpha1", "pkg/naming"},
	"pkg/roleplan":         {"api/v1alpha1"},
	"pkg/status":           {"api/v1alpha1", "pkg/naming", "pkg/revision", "pkg/roleplan"},
	"pkg/failpoint":        nil,
	"pkg/operator":         {"api/v1alpha1", "pkg/failpoint", "pkg/naming", "pkg/revision", "pkg/roleplan", "pkg/scheme", "pkg/status", "pkg/operator/lwsrbac"},
	"pkg/operator/lwsrbac": nil,
	"pkg/tui":              {"api/v1alpha1", "pkg/naming", "pkg/revision", "pkg/roleplan", "pkg/scheme", "pkg/status"},
	"pkg/cli":              {"api/v1alpha1", "api/v1alpha1/applyconfiguration/api/v1alpha1", "config", "pkg/naming", "pkg/revision", "pkg/roleplan", "pkg/scheme", "pkg/status", "pkg/tui"},
	"cmd/kubectl-llm":      {"pkg/cli"},
}

// fileExceptions are single files allowed one more import: the `operator` command runs the
// operator, so it is the one file of the CLI that imports it.
var fileExceptions = map[string][]string{
	"pkg/cli/operator.go": {"pkg/operator", "pkg/failpoint"},
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

// Views read the update revision from the serving's status and never name a revision
// themselves: a plugin newer than the operator would hash the spec otherwise and show an
// "update revision" that does not exist. These are the functions that name one.
var namingRevisions = []string{"Name", "Hash"}

func TestViewsDoNotNameRevisions(t *testing.T) {
	fset := token.NewFileSet()
	for _, dir := range []string{"pkg/cli", "pkg/tui"} {
		files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, p := range files {
			if strings.HasSuffix(p, "_test.go") {
				continue // tests seed revisions as the operator would
			}
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, call := range revisionCalls(f) {
				if slices.Contains(namingRevisions, call) {
					t.Errorf("%s calls revision.%s: read status.updateRevision, or compare specs with revision.Same", filepath.ToSlash(p), call)
				}
			}
		}
	}
}

// revisionCalls are the names used from pkg/revision in a file, under whatever name it is imported.
func revisionCalls(f *ast.File) []string {
	local := ""
	for _, imp := range f.Imports {
		if ip, _ := strconv.Unquote(imp.Path.Value); ip == module+"pkg/revision" {
			local = "revision"
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	var out []string
	if local == "" {
		return nil
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == local {
				out = append(out, sel.Sel.Name)
			}
		}
		return true
	})
	return out
}

func TestRevisionCallsFindsAnAliasedImport(t *testing.T) {
	src := `package x
import rv "` + module + `pkg/revision"
var _ = rv.Hash
`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := revisionCalls(f); !slices.Equal(got, []string{"Hash"}) {
		t.Errorf("revisionCalls = %v, want [Hash]", got)
	}
}
