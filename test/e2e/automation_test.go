package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// ciScript is the CI rollout script of docs/automation.md, taken from the page itself so that the
// documented script is the tested one.
func ciScript(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "automation.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(raw), "<!-- ci-rollout.sh: the e2e test runs the block below -->\n```bash\n")
	script, _, closed := strings.Cut(after, "\n```\n")
	if !ok || !closed {
		t.Fatal("docs/automation.md has no ci-rollout.sh block")
	}
	path := filepath.Join(t.TempDir(), "ci-rollout.sh")
	if err := os.WriteFile(path, []byte(script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// runCIScript runs the script as a pipeline would: no terminal, the plugin from KUBECTL_LLM.
func runCIScript(t *testing.T, script, ns, manifest, name, image, smokeTest string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("bash", script, manifest, name, image)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig, "KUBECTL_LLM="+binary, "NAMESPACE="+ns,
		"TIMEOUT=3m", "CANARY_GROUPS=1", "SMOKE_TEST="+smokeTest)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// The documented CI script, both ways: the canary passes the smoke test and is promoted to every
// group; then a canary that fails it is aborted back to the current revision and fails the job.
func TestTheCIScriptOfTheDocsPromotesOrAborts(t *testing.T) {
	calmTest(t)
	ns := namespace(t)
	script := ciScript(t)
	manifest := filepath.Join(t.TempDir(), "qwen.yaml")
	if err := os.WriteFile(manifest, []byte(fmt.Sprintf(`apiVersion: serving.kubectl-llm.dev/v1alpha1
kind: ModelServing
metadata:
  name: qwen
  annotations: {%s: 1s}
spec:
  model: Qwen/Qwen3-0.6B
  engine: {image: "vllm/vllm-openai:v0.11.0"}
  replicas: 3
  groupSize: 2
  resources: {gpus: 1}
`, v1.AnnotationSimulatedLoadDelay)), 0o644); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	out, errOut, code := runCIScript(t, script, ns, manifest, "qwen", "vllm/vllm-openai:v0.12.0", "true")
	t.Logf("promote path in %s:\n%s%s", time.Since(start).Round(time.Millisecond), out, errOut)
	if code != 0 {
		t.Fatalf("the promote path exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "rolled out vllm/vllm-openai:v0.12.0 to every group of qwen") || strings.Contains(out, "\x1b[") {
		t.Errorf("stdout of the promote path:\n%s", out)
	}
	ms := getServing(t, ns, "qwen")
	if ms.Spec.Engine.Image != "vllm/vllm-openai:v0.12.0" || ptr.Deref(ms.Spec.Rollout.Partition, -1) != 0 {
		t.Errorf("after promote: image %s partition %d, want v0.12.0 and 0", ms.Spec.Engine.Image, ptr.Deref(ms.Spec.Rollout.Partition, -1))
	}
	wantEveryGroupOn(t, ns, ms.Status.UpdateRevision, 3)
	promoted := ms.Status.UpdateRevision

	// The manifest in git now says v0.12.0; the next canary fails its smoke test.
	if err := os.WriteFile(manifest, bytes.ReplaceAll(mustRead(t, manifest), []byte("v0.11.0"), []byte("v0.12.0")), 0o644); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	out, errOut, code = runCIScript(t, script, ns, manifest, "qwen", "vllm/vllm-openai:v0.13.0", "false")
	t.Logf("abort path in %s:\n%s%s", time.Since(start).Round(time.Millisecond), out, errOut)
	if code != 1 || !strings.Contains(errOut, "canary of vllm/vllm-openai:v0.13.0 on qwen failed (exit 10): aborting") {
		t.Fatalf("the abort path exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	ms = getServing(t, ns, "qwen")
	if ms.Spec.Engine.Image != "vllm/vllm-openai:v0.12.0" || ptr.Deref(ms.Spec.Rollout.Partition, -1) != 0 {
		t.Errorf("after abort: image %s partition %d, want v0.12.0 and 0", ms.Spec.Engine.Image, ptr.Deref(ms.Spec.Rollout.Partition, -1))
	}
	if ms.Status.UpdateRevision != promoted {
		t.Errorf("after abort the update revision is %s, want the promoted %s", ms.Status.UpdateRevision, promoted)
	}
	wantEveryGroupOn(t, ns, promoted, 3)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantEveryGroupOn checks that groups ready groups exist and every live pod is on rev.
func wantEveryGroupOn(t *testing.T, ns, rev string, groups int) {
	t.Helper()
	ps := live(pods(t, ns, "qwen"))
	if n := readyGroups(ps, 2); n != groups {
		t.Errorf("%d ready groups, want %d: %+v", n, groups, ps)
	}
	for _, p := range ps {
		if p.Revision != rev {
			t.Errorf("pod %s is on revision %s, want %s", p.Name, p.Revision, rev)
		}
	}
}
