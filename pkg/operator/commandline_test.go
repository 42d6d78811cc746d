package operator

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// The multi-node vLLM leader runs a /bin/sh script. A spec value in it must reach vllm as one
// word, whatever it holds: the script is run here by a real shell with stand-ins for ray and vllm.
func TestTheLeaderScriptPassesSpecValuesAsOneWord(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Fatalf("the leader script is a /bin/sh script and this test runs it: install a POSIX shell (%v)", err)
	}
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("ray", `[ "$1" = list ] && echo '"state": "ALIVE"'; exit 0`+"\n")
	write("vllm", `for a in "$@"; do printf '%s\n' "$a"; done`+"\n")
	write("touch-me", "touch "+filepath.Join(dir, "pwned")+"\n")

	for _, model := range []string{
		"Qwen/Qwen3-0.6B",
		"x; touch-me",
		"$(touch-me)",
		"`touch-me`",
		"it's \"quoted\" & | > <",
	} {
		ms := fixtures.Serving("qwen", "ns").GroupSize(2).Model(model).Obj()
		ms.Spec.Weights = &v1.WeightsSpec{Source: "pvc://cache/qwen"} // so the served name differs from the path
		command, args := EngineCommand(ms.Spec, Leader)
		if len(command) != 4 || command[0] != "/bin/sh" {
			t.Fatalf("command = %q, want a /bin/sh -c script", command)
		}
		// What the kubelet does to command and args first: $$ becomes $ (no $(VAR) of ours is in them).
		argv := append(append([]string{}, command...), args...)
		for i := range argv {
			argv[i] = strings.ReplaceAll(argv[i], "$$", "$")
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "LWS_GROUP_SIZE=1", "LLM_MODEL=/models/qwen"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("model %q: the script failed: %v\n%s", model, err, out)
		}
		words := strings.Split(strings.TrimSpace(string(out)), "\n")
		i := indexOf(words, "--served-model-name")
		if i < 0 || i+1 >= len(words) || words[i+1] != model {
			t.Errorf("model %q: vllm got %q, want --served-model-name followed by the model as one word", model, words)
		}
		if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
			t.Fatalf("model %q ran a command", model)
		}
	}
}

// A safe model name keeps the script it always had (no rollout on upgrade); an unsafe one is quoted.
func TestShellQuoteLeavesSafeWordsAlone(t *testing.T) {
	for in, want := range map[string]string{
		"Qwen/Qwen3-0.6B":   "Qwen/Qwen3-0.6B",
		"--port":            "--port",
		"a b":               "'a b'",
		"it's":              `'it'\''s'`,
		"":                  "''",
		"$(LWS_GROUP_SIZE)": "'$(LWS_GROUP_SIZE)'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
	// The kubelet expands $(VAR) in args and env values; $$ is a literal $.
	if got := kubeEscape("a$(HOME)b$"); got != "a$$(HOME)b$$" {
		t.Errorf("kubeEscape = %s", got)
	}
}

func indexOf(xs []string, x string) int {
	for i, s := range xs {
		if s == x {
			return i
		}
	}
	return -1
}
