package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

func TestDeployThenGet(t *testing.T) {
	ns := namespace(t, "deploy-get")
	now := time.Now()
	r := run(t, now, "-n", ns, "deploy", "qwen", "--model", "Qwen/Qwen3-0.6B", "--gpus", "1", "--group-size", "2", "--replicas", "2",
		"--max-surge", "1", "--max-unavailable", "0", "--env", "NCCL_DEBUG=INFO", "--arg", "--max-model-len=4096")
	expectCode(t, r, 0)
	if r.Out != "modelserving.serving.kubectl-llm.dev/qwen created\n" {
		t.Errorf("deploy printed %q", r.Out)
	}
	ms := getServing(t, ns, "qwen")
	if *ms.Spec.Replicas != 2 || ms.Spec.GroupSize != 2 || *ms.Spec.Resources.GPUs != 1 || ms.Spec.Rollout.MaxSurge.IntValue() != 1 ||
		ms.Spec.Rollout.MaxUnavailable.IntValue() != 0 || ms.Spec.Engine.Env[0].Value != "INFO" || ms.Spec.Engine.Args[0] != "--max-model-len=4096" {
		t.Errorf("applied spec is not what the flags said: %+v", ms.Spec)
	}
	if ms.Spec.Engine.Type != v1.EngineVLLM || ms.Spec.Engine.Port != 8000 {
		t.Errorf("defaults not filled by the API server: %+v", ms.Spec.Engine)
	}
	owned := false
	for _, mf := range ms.ManagedFields {
		if mf.Manager == v1.FieldManager && mf.Operation == "Apply" {
			owned = true
		}
	}
	if !owned {
		t.Errorf("no Apply entry for field manager %s: %+v", v1.FieldManager, ms.ManagedFields)
	}

	// Applying the same again changes nothing; a change is "configured".
	r = run(t, now, "-n", ns, "deploy", "qwen", "--model", "Qwen/Qwen3-0.6B", "--gpus", "1", "--group-size", "2", "--replicas", "2",
		"--max-surge", "1", "--max-unavailable", "0", "--env", "NCCL_DEBUG=INFO", "--arg", "--max-model-len=4096")
	expectCode(t, r, 0)
	if r.Out != "modelserving.serving.kubectl-llm.dev/qwen unchanged\n" {
		t.Errorf("second deploy printed %q, want unchanged", r.Out)
	}

	// A server dry run of a change says configured and writes nothing; of the same flags, unchanged.
	// (Flags left out are fields given up: server-side apply removes them, so only the same set is unchanged.)
	r = run(t, now, "-n", ns, "deploy", "qwen", "--model", "Qwen/Qwen3-8B", "--dry-run=server")
	expectCode(t, r, 0)
	if r.Out != "modelserving.serving.kubectl-llm.dev/qwen configured (server dry run)\n" || getServing(t, ns, "qwen").Spec.Model != "Qwen/Qwen3-0.6B" {
		t.Errorf("server dry run of a change printed %q (model now %s)", r.Out, getServing(t, ns, "qwen").Spec.Model)
	}
	r = run(t, now, "-n", ns, "deploy", "qwen", "--model", "Qwen/Qwen3-0.6B", "--gpus", "1", "--group-size", "2", "--replicas", "2",
		"--max-surge", "1", "--max-unavailable", "0", "--env", "NCCL_DEBUG=INFO", "--arg", "--max-model-len=4096", "--dry-run=server")
	expectCode(t, r, 0)
	if r.Out != "modelserving.serving.kubectl-llm.dev/qwen unchanged (server dry run)\n" {
		t.Errorf("server dry run of the same model printed %q", r.Out)
	}

	r = run(t, now, "-n", ns, "get", "qwen", "-o", "name")
	expectCode(t, r, 0)
	if r.Out != "modelserving.serving.kubectl-llm.dev/qwen\n" {
		t.Errorf("get -o name printed %q", r.Out)
	}
	r = run(t, now, "-n", ns, "list")
	expectCode(t, r, 0)
	lines := strings.Split(strings.TrimSpace(r.Out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") || !strings.HasPrefix(lines[1], "qwen ") || !strings.Contains(lines[1], "0/2") {
		t.Errorf("list printed:\n%s", r.Out)
	}
}

func TestDeployFromAFile(t *testing.T) {
	ns := namespace(t, "deploy-file")
	path := filepath.Join(t.TempDir(), "ms.yaml")
	manifest := `apiVersion: serving.kubectl-llm.dev/v1alpha1
kind: ModelServing
metadata:
  name: from-file
spec:
  model: Qwen/Qwen3-8B
  engine: {type: sglang}
  replicas: 3
`
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, time.Now(), "-n", ns, "deploy", "-f", path)
	expectCode(t, r, 0)
	ms := getServing(t, ns, "from-file")
	if ms.Spec.Model != "Qwen/Qwen3-8B" || ms.Spec.Engine.Type != v1.EngineSGLang || *ms.Spec.Replicas != 3 {
		t.Errorf("spec from file: %+v", ms.Spec)
	}
	// From stdin, with -o yaml printing the server's object.
	r = runCtx(context.Background(), t, time.Now(), strings.Replace(manifest, "replicas: 3", "replicas: 4", 1), "-n", ns, "deploy", "-f", "-", "-o", "yaml")
	expectCode(t, r, 0)
	if !strings.Contains(r.Out, "replicas: 4") || !strings.Contains(r.Out, "kind: ModelServing") || strings.Contains(r.Out, "managedFields") {
		t.Errorf("deploy -f - -o yaml printed:\n%s", r.Out)
	}
}

func TestDeployDryRunRendersWithoutWriting(t *testing.T) {
	ns := namespace(t, "deploy-dry-run")
	r := run(t, time.Now(), "-n", ns, "deploy", "qwen", "--model", "Qwen/Qwen3-0.6B", "--gpus", "1", "--replicas", "2", "--dry-run=client", "-o", "yaml")
	expectCode(t, r, 0)
	golden(t, "deploy-dry-run-client", r.Out)

	r = run(t, time.Now(), "-n", ns, "deploy", "qwen", "--model", "Qwen/Qwen3-0.6B", "--dry-run=server", "-o", "json")
	expectCode(t, r, 0)
	for _, want := range []string{`"kind": "ModelServing"`, `"maxUnavailable": 1`, `"startupTimeout": "20m"`, `"uid": "`} {
		if !strings.Contains(r.Out, want) {
			t.Errorf("server dry run lacks %s (defaults filled by the API server):\n%s", want, r.Out)
		}
	}
	r = run(t, time.Now(), "-n", ns, "deploy", "qwen", "--model", "Qwen/Qwen3-0.6B", "--dry-run=server")
	expectCode(t, r, 0)
	if r.Out != "modelserving.serving.kubectl-llm.dev/qwen created (server dry run)\n" {
		t.Errorf("server dry run printed %q", r.Out)
	}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "qwen"}, &v1.ModelServing{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("a dry run wrote the serving: get returned %v", err)
	}
}

func TestDeployPassesAPIRefusalsThroughNamingTheField(t *testing.T) {
	ns := namespace(t, "deploy-refused")
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("apiVersion: serving.kubectl-llm.dev/v1alpha1\nkind: ModelServing\nmetadata: {name: bad}\nspec:\n  model: x\n  weights: {source: ftp://nope}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, time.Now(), "-n", ns, "deploy", "-f", path)
	expectCode(t, r, 1)
	if !strings.Contains(r.Err, "spec.weights.source") || !strings.Contains(r.Err, "must start with pvc://, hf:// or s3://") {
		t.Errorf("refusal lost the field or the message: %s", r.Err)
	}
}
