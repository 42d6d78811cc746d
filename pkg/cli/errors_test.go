package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-llm/kubectl-llm/pkg/cli"
	"github.com/kubectl-llm/kubectl-llm/pkg/scheme"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// TestBadInvocations runs commands a person gets wrong and checks each says what is wrong,
// naming the flag or the argument, with exit code 1. The whole transcript is a golden file too.
func TestBadInvocations(t *testing.T) {
	ns := namespace(t, "bad-invocations")
	seedServing(t, ns, fixtures.Serving("qwen", ns).Replicas(3))
	manifest := filepath.Join(t.TempDir(), "ms.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The rules of the CRD (schema and CEL) answer with the API server's own message, which names
	// the field; the plugin checks only what it cannot send (flag syntax, quantities, KEY=VALUE).
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"deploy", "--model", "x"}, "NAME is required: kubectl llm deploy NAME --model MODEL"},
		{[]string{"deploy", "q"}, "--model is required"},
		{[]string{"deploy", "q", "r", "--model", "x"}, "expected one NAME, got 2 arguments (q r)"},
		{[]string{"deploy", "Qwen_3", "--model", "x"}, "metadata.name must be a DNS-1035 label"},
		{[]string{"deploy", "q", "--model", "x", "--engine", "tgi"}, `spec.engine.type: Unsupported value: "tgi": supported values: "vllm", "sglang", "custom"`},
		{[]string{"deploy", "q", "--model", "x", "--engine", "custom"}, "spec.engine.image is required when spec.engine.type is custom"},
		{[]string{"deploy", "q", "--model", "x", "--gpus", "-1"}, "spec.resources.gpus: Invalid value: -1: spec.resources.gpus must be a whole number of GPUs per pod between 0 and 64"},
		{[]string{"deploy", "q", "--model", "x", "--group-size", "0"}, "spec.groupSize: Invalid value: 0: spec.groupSize is the number of pods per group (leader + workers) and must be between 1 and 64"},
		{[]string{"deploy", "q", "--model", "x", "--replicas", "1001"}, "spec.replicas: Invalid value: 1001: spec.replicas is the number of groups and must be between 0 and 1000"},
		{[]string{"deploy", "q", "--model", "x", "--replicas", "two"}, `invalid argument "two" for "--replicas" flag`},
		{[]string{"deploy", "q", "--model", "x", "--port", "70000"}, "spec.engine.port: Invalid value: 70000: spec.engine.port must be a TCP port between 1 and 65535"},
		{[]string{"deploy", "q", "--model", "x", "--max-surge", "0", "--max-unavailable", "0"}, "spec.rollout.maxSurge and spec.rollout.maxUnavailable cannot both be 0"},
		{[]string{"deploy", "q", "--model", "x", "--max-surge", "lots"}, `spec.rollout.maxSurge: Invalid value: "lots": spec.rollout.maxSurge must be a number of groups between 0 and 1000 or a percentage`},
		{[]string{"deploy", "q", "--model", "x", "--max-unavailable", "-1"}, "spec.rollout.maxUnavailable: Invalid value: -1: spec.rollout.maxUnavailable must be a number of groups between 0 and 1000 or a percentage"},
		{[]string{"deploy", "q", "--model", "x", "--strategy", "BlueGreen"}, `spec.rollout.strategy: Unsupported value: "BlueGreen": supported values: "RollingUpdate", "Recreate"`},
		{[]string{"deploy", "q", "--model", "x", "--strategy", "Recreate", "--max-surge", "1"}, "spec.rollout.maxSurge must be 0 with strategy Recreate"},
		{[]string{"deploy", "q", "--model", "x", "--memory", "lots"}, `--memory must be a quantity such as 8 or 64Gi, not "lots"`},
		{[]string{"deploy", "q", "--model", "x", "--weights", "ftp://x"}, `spec.weights.source: Invalid value: "ftp://x": spec.weights.source must start with pvc://, hf:// or s3://`},
		{[]string{"deploy", "q", "--model", "x", "--env", "NOVALUE"}, `--env must be KEY=VALUE, not "NOVALUE"`},
		{[]string{"deploy", "q", "--model", "x", "--partition", "-2"}, "spec.rollout.partition: Invalid value: -2: spec.rollout.partition must be between 0 and 1000"},
		{[]string{"deploy", "q", "--model", "x", "--dry-run=maybe"}, `--dry-run must be "none", "client" or "server", not "maybe"`},
		{[]string{"deploy", "q", "--model", "x", "-o", "table"}, `--output (-o) must be one of yaml, json, name, not "table"`},
		{[]string{"deploy", "-f", manifest, "--model", "x"}, "--model cannot be combined with -f"},
		{[]string{"deploy", "-f", manifest}, "expected apiVersion serving.kubectl-llm.dev/v1alpha1, kind ModelServing; got apiVersion \"v1\", kind \"ConfigMap\""},
		{[]string{"deploy", "-f", "/does/not/exist.yaml"}, "-f: open /does/not/exist.yaml: no such file or directory"},
		{[]string{"deploy", "q", "--model", "x", "--frobnicate"}, "unknown flag: --frobnicate"},
		{[]string{"frobnicate"}, `unknown command "frobnicate" for "kubectl llm"`},
		{[]string{"get", "-o", "xml"}, `--output (-o) must be one of table, wide, yaml, json, name, not "xml"`},
		{[]string{"get", "qwen", "-A"}, "NAME cannot be combined with --all-namespaces (-A)"},
		{[]string{"get", "-w", "-o", "yaml"}, "--watch (-w) prints table lines: use it with -o table or -o wide, not -o yaml"},
		{[]string{"get", "a", "b"}, "expected at most one NAME, got 2 arguments (a b)"},
		{[]string{"watch", "a", "b"}, "expected at most one NAME, got 2 arguments (a b): kubectl llm watch [NAME]"},
		{[]string{"get", "qwne"}, `modelserving "qwne" not found in namespace "bad-invocations"; did you mean qwen?`},
		{[]string{"describe"}, "NAME is required: kubectl llm describe NAME"},
		{[]string{"describe", "llama"}, `modelserving "llama" not found in namespace "bad-invocations" (kubectl llm get lists the 1 there)`},
		{[]string{"rollout", "status", "qwen", "--timeout", "-1s"}, "--timeout must be 0 (wait forever) or a positive duration such as 10m, not -1s"},
		{[]string{"rollout", "history", "qwen", "--revision", "-3"}, "--revision must be a revision number of 1 or more, not -3"},
		{[]string{"rollout", "undo", "qwen", "--to-revision", "-1"}, "--to-revision must be 0 (the previous revision) or a revision number, not -1"},
		{[]string{"rollout", "undo", "qwen"}, `serving "qwen" has no previous revision to roll back to`},
		{[]string{"rollout", "undo", "qwen", "--to-revision", "4"}, `revision 4 of serving "qwen" not found: no revisions are recorded`},
		{[]string{"rollout", "resume", "qwen"}, `serving "qwen" is not paused`},
		{[]string{"set", "image", "qwen"}, "expected NAME and IMAGE, got 1 argument(s): kubectl llm set image NAME IMAGE"},
		{[]string{"set", "image", "qwen", "bad image"}, `IMAGE "bad image" is not an image reference`},
		{[]string{"scale", "qwen"}, "--replicas is required: the number of groups, e.g. --replicas 2"},
		{[]string{"scale", "qwen", "--replicas", "-2"}, "--replicas must be 0 or more groups, not -2"},
		{[]string{"canary", "qwen", "--groups", "1"}, "--image or --model is required"},
		{[]string{"canary", "qwen", "--image", "x:1"}, "--groups or --fraction is required"},
		{[]string{"canary", "qwen", "--image", "x:1", "--groups", "0"}, "--groups must be 1 or more, not 0"},
		{[]string{"canary", "qwen", "--image", "x:1", "--groups", "5"}, `--groups 5 is more than the 3 group(s) of serving "qwen"`},
		{[]string{"canary", "promote", "qwen"}, `serving "qwen" has no canary to promote: spec.rollout.partition is already 0`},
		{[]string{"canary", "abort", "qwen"}, `serving "qwen" has no current revision recorded yet`},
		{[]string{"restart", "qwen", "--group", "7"}, `--group 7 does not exist: serving "qwen" has groups 0 to 2`},
		{[]string{"restart", "qwen", "--group", "-1"}, "--group must be a group index of 0 or more, not -1"},
		{[]string{"preflight"}, "NAME is required: kubectl llm preflight NAME"},
		{[]string{"operator", "--concurrent-serving-syncs", "0"}, "--concurrent-serving-syncs and --concurrent-lws-syncs must be at least 1, not 0 and 8"},
		{[]string{"operator", "--concurrent-service-creates", "0"}, "--concurrent-service-creates must be at least 1, not 0"},
		{[]string{"operator", "--leader-elect-retry-period", "0s"}, "--leader-elect-retry-period must be a positive duration such as 2s, not 0s"},
		{[]string{"operator", "--leader-elect-renew-deadline", "2s"}, "--leader-elect-renew-deadline (2s) must be longer than --leader-elect-retry-period (2s)"},
		{[]string{"operator", "--leader-elect-lease-duration", "10s"}, "--leader-elect-lease-duration (10s) must be longer than --leader-elect-renew-deadline (10s)"},
	}
	var transcript strings.Builder
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := run(t, time.Now(), append([]string{"-n", ns}, tc.args...)...)
			fmt.Fprintf(&transcript, "$ kubectl llm %s\nexit %d\n%s\n", strings.ReplaceAll(strings.Join(tc.args, " "), manifest, "ms.yaml"), r.Code, strings.ReplaceAll(r.Err, manifest, "ms.yaml"))
			if r.Code != 1 {
				t.Errorf("exit code %d, want 1 (stderr %q)", r.Code, r.Err)
			}
			if !strings.HasPrefix(r.Err, "error: ") || !strings.Contains(r.Err, tc.want) {
				t.Errorf("stderr %q does not say %q", r.Err, tc.want)
			}
		})
	}
	if got := getServing(t, ns, "qwen"); *got.Spec.Replicas != 3 || got.Spec.Engine.Image != "" {
		t.Errorf("a refused invocation changed the serving: %+v", got.Spec)
	}
	golden(t, "errors", transcript.String())
}

// TestNoClusterReachable points the plugin at a port nothing listens on.
func TestNoClusterReachable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(path, &rest.Config{Host: "https://127.0.0.1:1", BearerToken: "token"}); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	o := &cli.RootOptions{ConfigFlags: genericclioptions.NewConfigFlags(true),
		Streams: genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}, Clock: clocktesting.NewFakePassiveClock(time.Now())}
	cmd := cli.NewRootCommandWith(o)
	cmd.SetArgs([]string{"--kubeconfig", path, "--request-timeout", "5s", "get"})
	code := cli.Execute(context.Background(), cmd, &errOut)
	if code != 1 || !strings.HasPrefix(errOut.String(), "error: cannot reach the cluster at https://127.0.0.1:1: ") ||
		!strings.Contains(errOut.String(), "(is it running? check --kubeconfig, --context and --server)") {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}

// TestCRDNotInstalled uses a client whose API discovery knows no ModelServing, as in a cluster
// where kubectl llm install never ran.
func TestCRDNotInstalled(t *testing.T) {
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.New(), Mapper: meta.NewDefaultRESTMapper(nil)})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"get"}, {"describe", "qwen"}, {"rollout", "status", "qwen"}, {"scale", "qwen", "--replicas", "1"}} {
		var out, errOut bytes.Buffer
		o := &cli.RootOptions{ConfigFlags: genericclioptions.NewConfigFlags(true), Client: c,
			Streams: genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}, Clock: clocktesting.NewFakePassiveClock(time.Now())}
		cmd := cli.NewRootCommandWith(o)
		cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
		code := cli.Execute(context.Background(), cmd, &errOut)
		want := "error: the ModelServing API (modelservings.serving.kubectl-llm.dev/v1alpha1) is not installed in this cluster: run kubectl llm install\n"
		if code != 1 || errOut.String() != want {
			t.Errorf("%v: exit %d, stderr %q, want %q", args, code, errOut.String(), want)
		}
	}
}
