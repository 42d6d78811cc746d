package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/cli"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// scriptServing seeds a serving every command can act on: two groups on v0.12.0 with revisions 1
// (v0.11.0, the current one) and 2 (v0.12.0, the spec), a finished rollout and a leader pod for
// group 0. tweak changes the serving before it is created (paused, a canary partition...).
func scriptServing(t *testing.T, ns, name string, tweak func(*fixtures.ServingBuilder)) {
	t.Helper()
	b := fixtures.Serving(name, ns).Replicas(2).Image("vllm/vllm-openai:v0.12.0")
	if tweak != nil {
		tweak(b)
	}
	ms := seedServing(t, ns, b)
	var revs []string
	for i, img := range []string{"vllm/vllm-openai:v0.11.0", "vllm/vllm-openai:v0.12.0"} {
		spec := ms.Spec.DeepCopy()
		spec.Engine.Image = img
		revs = append(revs, recordRevision(t, ms, *spec, int64(i+1)))
	}
	writeStatus(t, ms, v1.ModelServingStatus{Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, CurrentRevision: revs[0], UpdateRevision: revs[1],
		Conditions: conditions(time.Now(), available, complete, notDegraded)})
	seedPod(t, ns, 0, fixtures.Pod(name, 0, 0, revs[1]), false).writeStatus(t, time.Now(), time.Minute)
}

// scriptCommand is one command a script runs on a serving; NAME stands for the serving.
type scriptCommand struct {
	name  string
	args  []string
	tweak func(*fixtures.ServingBuilder)
	// changes: the command writes (a user who may only read is refused).
	changes bool
	// named: the command prints the serving's name with -o name.
	named bool
}

var scriptCommands = []scriptCommand{
	{name: "get", args: []string{"get", "NAME", "-o", "name"}, named: true},
	{name: "describe", args: []string{"describe", "NAME"}},
	{name: "rollout status", args: []string{"rollout", "status", "NAME"}},
	{name: "rollout history", args: []string{"rollout", "history", "NAME"}},
	{name: "rollout undo", args: []string{"rollout", "undo", "NAME", "-o", "name"}, changes: true, named: true},
	{name: "rollout pause", args: []string{"rollout", "pause", "NAME", "-o", "name"}, changes: true, named: true},
	{name: "rollout resume", args: []string{"rollout", "resume", "NAME", "-o", "name"}, changes: true, named: true,
		tweak: func(b *fixtures.ServingBuilder) { b.Paused() }},
	{name: "set image", args: []string{"set", "image", "NAME", "vllm/vllm-openai:v0.13.0", "-o", "name"}, changes: true, named: true},
	{name: "scale", args: []string{"scale", "NAME", "--replicas", "3", "-o", "name"}, changes: true, named: true},
	{name: "canary", args: []string{"canary", "NAME", "--image", "vllm/vllm-openai:v0.13.0", "--groups", "1", "-o", "name"}, changes: true, named: true},
	{name: "canary promote", args: []string{"canary", "promote", "NAME", "-o", "name"}, changes: true, named: true,
		tweak: func(b *fixtures.ServingBuilder) { b.Partition(1) }},
	{name: "canary abort", args: []string{"canary", "abort", "NAME", "-o", "name"}, changes: true, named: true,
		tweak: func(b *fixtures.ServingBuilder) { b.Partition(1) }},
	{name: "restart", args: []string{"restart", "NAME", "-o", "name"}, changes: true, named: true},
	{name: "restart group", args: []string{"restart", "NAME", "--group", "0", "-o", "name"}, changes: true, named: true},
	{name: "preflight", args: []string{"preflight", "NAME"}},
	{name: "watch", args: []string{"watch", "NAME", "--no-tui"}}, // runs until stopped: no success case here
}

func (c scriptCommand) on(name string) []string {
	args := make([]string, len(c.args))
	for i, a := range c.args {
		if a == "NAME" {
			a = name
		}
		args[i] = a
	}
	return args
}

// wantError checks a failed invocation: its exit code, nothing on stdout, and stderr one
// "error: " message holding each of want.
func wantError(t *testing.T, r result, code int, want ...string) {
	t.Helper()
	expectCode(t, r, code)
	if r.Out != "" {
		t.Errorf("a failed invocation printed on stdout:\n%s", r.Out)
	}
	if !strings.HasPrefix(r.Err, "error: ") {
		t.Errorf("stderr %q does not start with \"error: \"", r.Err)
	}
	for _, w := range want {
		if !strings.Contains(r.Err, w) {
			t.Errorf("stderr %q does not say %q", r.Err, w)
		}
	}
}

// TestExitCodesForScripts runs every command that acts on a serving as a script does, on success,
// on a serving that does not exist, as a user RBAC forbids, as a user who may only read, and
// against a cluster that does not answer.
func TestExitCodesForScripts(t *testing.T) {
	ns := testenv.Namespace(t, env.Client, "script-exit-codes-")
	// "reader" may read servings, their revisions, pods and events in the namespace, nothing more.
	create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{v1.GroupVersion.Group}, Resources: []string{"modelservings"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"controllerrevisions"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods", "events"}, Verbs: []string{"get", "list", "watch"}},
	}}, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "reader"}}})
	unreachable := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(unreachable, &rest.Config{Host: "https://127.0.0.1:1", BearerToken: "token"}); err != nil {
		t.Fatal(err)
	}
	for i, c := range scriptCommands {
		name := "s" + string(rune('a'+i))
		reader := name + "-read"
		scriptServing(t, ns, name, c.tweak)
		scriptServing(t, ns, reader, c.tweak)
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.name != "watch" {
				r := script(t, fromDevNull, toPipe, append([]string{"-n", ns}, c.on(name)...)...)
				expectCode(t, r, 0)
				if c.named && r.Out != qualified(name)+"\n" {
					t.Errorf("-o name printed %q, want only %q", r.Out, qualified(name)+"\n")
				}
				if r.Out == "" || r.Err != "" {
					t.Errorf("success printed stdout %q, stderr %q", r.Out, r.Err)
				}
			}
			r := script(t, fromDevNull, toPipe, append([]string{"-n", ns}, c.on("nope")...)...)
			wantError(t, r, 1, `modelserving "nope" not found in namespace "`+ns+`"`)

			r = script(t, fromDevNull, toPipe, append([]string{"-n", ns, "--as", "nobody"}, c.on(name)...)...)
			wantError(t, r, 1, "forbidden", `User "nobody" cannot`)

			if c.changes {
				r = script(t, fromDevNull, toPipe, append([]string{"-n", ns, "--as", "reader"}, c.on(reader)...)...)
				wantError(t, r, 1, "forbidden", `User "reader" cannot`)
			}

			r = scriptAt(t, unreachable, fromDevNull, toPipe, append([]string{"-n", ns, "--request-timeout", "10s"}, c.on(name)...)...)
			wantError(t, r, 1, "cannot reach the cluster at https://127.0.0.1:1", "check --kubeconfig, --context and --server")
		})
	}
}

func qualified(name string) string { return "modelserving.serving.kubectl-llm.dev/" + name }

// TestOutputFormatsOfTheCommandsThatChangeAServing: -o json and -o yaml print the serving as it is
// after the change, and only that.
func TestOutputFormatsOfTheCommandsThatChangeAServing(t *testing.T) {
	ns := testenv.Namespace(t, env.Client, "script-output-")
	scriptServing(t, ns, "qwen", nil)
	for _, format := range []string{"json", "yaml"} {
		image := "vllm/vllm-openai:v0.13." + map[string]string{"json": "1", "yaml": "2"}[format]
		r := script(t, fromDevNull, toFile, "-n", ns, "set", "image", "qwen", image, "-o", format)
		expectCode(t, r, 0)
		var ms v1.ModelServing
		var err error
		if format == "json" {
			err = json.Unmarshal([]byte(r.Out), &ms)
		} else {
			err = yaml.UnmarshalStrict([]byte(r.Out), &ms)
		}
		if err != nil {
			t.Fatalf("-o %s is not one serving: %v\n%s", format, err, r.Out)
		}
		if ms.Kind != "ModelServing" || ms.APIVersion != v1.GroupVersion.String() || ms.Name != "qwen" || ms.Spec.Engine.Image != image {
			t.Errorf("-o %s printed %s %s %s with image %s, want the changed serving", format, ms.APIVersion, ms.Kind, ms.Name, ms.Spec.Engine.Image)
		}
		if len(ms.ManagedFields) > 0 {
			t.Errorf("-o %s printed managed fields", format)
		}
	}
	r := script(t, fromDevNull, toPipe, "-n", ns, "scale", "qwen", "--replicas", "4", "-o", "table")
	wantError(t, r, 1, `--output (-o) must be one of yaml, json, name, not "table"`)
}

// TestRefusalsAndWaitsForScripts: what the API server refuses at admission (a CRD rule, a
// ValidatingAdmissionPolicy of the cluster) exits 1 with the server's reason; a failed rollout
// exits 2 and a wait that runs out of time 3.
func TestRefusalsAndWaitsForScripts(t *testing.T) {
	ns := testenv.Namespace(t, env.Client, "script-refusals-")
	ctx := context.Background()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: serving.kubectl-llm.dev/v1alpha1\nkind: ModelServing\nmetadata: {name: bad}\n"+
		"spec:\n  model: x\n  rollout: {maxSurge: 0, maxUnavailable: 0}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := script(t, fromDevNull, toPipe, "-n", ns, "deploy", "-f", bad)
	wantError(t, r, 1, `ModelServing.serving.kubectl-llm.dev "bad" is invalid`, "spec.rollout.maxSurge and spec.rollout.maxUnavailable cannot both be 0")

	// A cluster policy: engine images come from registry.example.com only, in this namespace.
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "script-refusals-registry"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{v1.GroupVersion.Group}, APIVersions: []string{"*"}, Resources: []string{"modelservings"}}},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: `!has(object.spec.engine.image) || object.spec.engine.image.startsWith("registry.example.com/")`,
				Message:    "engine images must come from registry.example.com",
			}},
		}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "script-refusals-registry"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}}}}
	create(t, policy, binding)
	t.Cleanup(func() { _ = env.Client.Delete(ctx, binding); _ = env.Client.Delete(ctx, policy) })
	scriptServing(t, ns, "qwen", func(b *fixtures.ServingBuilder) { b.Image("registry.example.com/vllm:v0.12.0") })
	// The API server takes a moment to enforce a new policy: wait until it refuses a dry run.
	testenv.Eventually(t, 30*time.Second, "the admission policy to refuse", func() (bool, error) {
		probe := fixtures.Serving("probe", ns).Image("docker.io/evil/vllm:latest").Obj()
		probe.Status = v1.ModelServingStatus{}
		err := env.Client.Create(ctx, probe, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "registry.example.com"), err
	})
	r = script(t, fromDevNull, toPipe, "-n", ns, "set", "image", "qwen", "docker.io/evil/vllm:latest")
	wantError(t, r, 1, "engine images must come from registry.example.com")
	if got := getServing(t, ns, "qwen").Spec.Engine.Image; got != "registry.example.com/vllm:v0.12.0" {
		t.Errorf("a refused set image changed the image to %s", got)
	}

	now := time.Now()
	failed := seedServing(t, ns, fixtures.Serving("failed", ns).Replicas(2))
	writeStatus(t, failed, v1.ModelServingStatus{Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 1, Conditions: conditions(now, available, deadline, notDegraded)})
	r = script(t, stdinClosed, toDevNull, "-n", ns, "rollout", "status", "failed")
	wantError(t, r, cli.ExitRolloutFailed, `serving "failed" exceeded its progress deadline`)

	rolling := seedServing(t, ns, fixtures.Serving("rolling", ns).Replicas(2))
	writeStatus(t, rolling, v1.ModelServingStatus{Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 1, Conditions: conditions(now, available, rollingOut, notDegraded)})
	r = script(t, stdinClosed, toDevNull, "-n", ns, "rollout", "status", "rolling", "--timeout", "1s")
	wantError(t, r, cli.ExitTimedOut, `timed out after 1s waiting for the rollout of serving "rolling"`)
}

// TestExitCodesOfTheCommandsOfANamespaceOrCluster: the commands that do not act on one existing
// serving exit 1 with nothing on stdout when RBAC forbids them or the cluster does not answer.
func TestExitCodesOfTheCommandsOfANamespaceOrCluster(t *testing.T) {
	ns := testenv.Namespace(t, env.Client, "script-cluster-codes-")
	unreachable := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(unreachable, &rest.Config{Host: "https://127.0.0.1:1", BearerToken: "token"}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"get"},
		{"get", "-A", "-o", "json"},
		{"deploy", "qwen", "--model", "Qwen/Qwen3-0.6B"},
		{"install"},
		{"uninstall", "--timeout", "5s"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := script(t, fromDevNull, toPipe, append([]string{"-n", ns, "--as", "nobody"}, args...)...)
			wantError(t, r, 1, "forbidden", `User "nobody" cannot`)
			r = scriptAt(t, unreachable, fromDevNull, toPipe, append([]string{"-n", ns, "--request-timeout", "10s"}, args...)...)
			wantError(t, r, 1, "cannot reach the cluster at https://127.0.0.1:1")
		})
	}
}

// rollout history -o prints the ControllerRevisions: a List, one name a line, or with --revision
// the one revision.
func TestRolloutHistoryOutputFormats(t *testing.T) {
	ns := testenv.Namespace(t, env.Client, "script-history-output-")
	scriptServing(t, ns, "qwen", nil)
	r := script(t, fromDevNull, toPipe, "-n", ns, "rollout", "history", "qwen", "-o", "name")
	expectCode(t, r, 0)
	names := strings.Split(strings.TrimSpace(r.Out), "\n")
	if len(names) != 2 || !strings.HasPrefix(names[0], "controllerrevision.apps/qwen-") {
		t.Errorf("-o name printed %q, want the 2 revisions' names", r.Out)
	}
	r = script(t, fromDevNull, toPipe, "-n", ns, "rollout", "history", "qwen", "-o", "yaml")
	expectCode(t, r, 0)
	var list struct {
		Kind  string
		Items []appsv1.ControllerRevision
	}
	if err := yaml.Unmarshal([]byte(r.Out), &list); err != nil || list.Kind != "List" || len(list.Items) != 2 || list.Items[1].Revision != 2 {
		t.Errorf("-o yaml: %v, kind %q, %d items\n%s", err, list.Kind, len(list.Items), r.Out)
	}
	r = script(t, fromDevNull, toPipe, "-n", ns, "rollout", "history", "qwen", "--revision", "1", "-o", "json")
	expectCode(t, r, 0)
	var cr appsv1.ControllerRevision
	if err := json.Unmarshal([]byte(r.Out), &cr); err != nil || cr.Kind != "ControllerRevision" || cr.Revision != 1 || "controllerrevision.apps/"+cr.Name != names[0] {
		t.Errorf("--revision 1 -o json: %v, %s revision %d\n%s", err, cr.Kind, cr.Revision, r.Out)
	}
	r = script(t, fromDevNull, toPipe, "-n", ns, "rollout", "history", "qwen", "--revision", "7", "-o", "json")
	wantError(t, r, 1, `revision 7 of serving "qwen" not found: recorded revisions are 1, 2`)
}

// version prints the client version first; a cluster that does not answer is then an error, as in
// kubectl, and --client never asks it.
func TestVersionForScripts(t *testing.T) {
	unreachable := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(unreachable, &rest.Config{Host: "https://127.0.0.1:1", BearerToken: "token"}); err != nil {
		t.Fatal(err)
	}
	const client = "Client Version: dev (commit none, built unknown)\n"
	r := script(t, fromDevNull, toPipe, "version")
	expectCode(t, r, 0)
	if !strings.HasPrefix(r.Out, client) || !strings.Contains(r.Out, "ModelServing API: v1alpha1 served") || r.Err != "" {
		t.Errorf("version: stdout %q, stderr %q", r.Out, r.Err)
	}
	r = scriptAt(t, unreachable, fromDevNull, toPipe, "version")
	expectCode(t, r, 1)
	if r.Out != client || !strings.HasPrefix(r.Err, "error: cannot reach the cluster at https://127.0.0.1:1: ") {
		t.Errorf("version against an unreachable cluster: stdout %q, stderr %q", r.Out, r.Err)
	}
	r = scriptAt(t, unreachable, fromDevNull, toPipe, "version", "--client")
	expectCode(t, r, 0)
	if r.Out != client || r.Err != "" {
		t.Errorf("version --client: stdout %q, stderr %q", r.Out, r.Err)
	}
}
