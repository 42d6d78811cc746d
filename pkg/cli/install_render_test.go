package cli_test

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kubectl-llm/kubectl-llm/config"
)

func decodeAll(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []map[string]any
	for {
		var o map[string]any
		if err := dec.Decode(&o); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatal(err)
		}
		if len(o) > 0 {
			out = append(out, o)
		}
	}
}

// `install --dry-run -o yaml` is what GitOps users commit: it must be the kustomize render of
// config/default (or config/embedded), object for object.
func TestInstallDryRunIsTheKustomizeRender(t *testing.T) {
	for _, variant := range []string{"external", "embedded"} {
		file := map[string]string{"external": "install/default.yaml", "embedded": "install/embedded.yaml"}[variant]
		want, err := config.Install.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		r := run(t, time.Now(), "install", "--lws="+variant, "--dry-run=client", "-o", "yaml")
		expectCode(t, r, 0)
		got, exp := decodeAll(t, []byte(r.Out)), decodeAll(t, want)
		if len(got) != len(exp) {
			t.Fatalf("--lws=%s rendered %d objects, config/%s has %d", variant, len(got), file, len(exp))
		}
		if diff := cmp.Diff(exp, got); diff != "" {
			t.Errorf("--lws=%s dry run differs from config/%s (-kustomize +install):\n%.3000s", variant, file, diff)
		}
	}
}
