package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// evil is issue 11's object: the API server stores it, a typed template cannot hold it.
func evil(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(), "kind": "ModelServing",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"model": "x", "template": map[string]any{"spec": map[string]any{"containers": int64(5)}}},
	}}
}

// One bad serving is shown as bad; the others still print, in get, get -w and describe.
func TestABadServingIsShownAsBadAndTheRestStillPrint(t *testing.T) {
	ns := namespace(t, "poison")
	create(t, &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Name: "good", Namespace: ns}, Spec: v1.ModelServingSpec{Model: "Qwen/Qwen3-0.6B"}}, evil(ns, "evil"))
	now := time.Now()

	r := run(t, now, "-n", ns, "get")
	expectCode(t, r, 0)
	lines := strings.Split(strings.TrimSpace(r.Out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "evil ") || !strings.Contains(lines[1], "InvalidSpec") || !strings.HasPrefix(lines[2], "good ") {
		t.Errorf("get printed:\n%s\nwant a header, evil as InvalidSpec and good", r.Out)
	}
	if !strings.Contains(r.Err, "spec.template.spec.containers: must be a list") {
		t.Errorf("get warned %q, want the field named", r.Err)
	}
	r = run(t, now, "-n", ns, "get", "evil", "-o", "yaml")
	expectCode(t, r, 0)
	if !strings.Contains(r.Out, "containers: 5") {
		t.Errorf("get -o yaml lost what is stored:\n%s", r.Out)
	}

	r = run(t, now, "-n", ns, "describe", "evil")
	expectCode(t, r, 0)
	if !strings.Contains(r.Out, "Invalid spec:") || !strings.Contains(r.Out, "spec.template.spec.containers") {
		t.Errorf("describe does not say why the spec is invalid:\n%s", r.Out)
	}

	ctx, cancel := context.WithCancel(context.Background())
	out, done := start(ctx, now, "-n", ns, "get", "-w")
	waitFor(t, out, "good")
	if !strings.Contains(out.String(), "evil") {
		t.Errorf("get -w printed:\n%s\nwant evil too", out.String())
	}
	cancel()
	<-done
}

// deploy -f refuses a manifest whose template or fields do not decode, naming the field, and
// applies nothing.
func TestDeployFromAFileRefusesWhatDoesNotDecode(t *testing.T) {
	ns := namespace(t, "deploy-bad-file")
	dir := t.TempDir()
	for name, tc := range map[string]struct{ manifest, want string }{
		"template": {"apiVersion: serving.kubectl-llm.dev/v1alpha1\nkind: ModelServing\nmetadata: {name: evil}\nspec: {model: x, template: {spec: {containers: 5}}}\n",
			"spec.template.spec.containers: must be a list"},
		"typo": {"apiVersion: serving.kubectl-llm.dev/v1alpha1\nkind: ModelServing\nmetadata: {name: typo}\nspec: {model: x, replica: 2}\n",
			`unknown field "spec.replica"`},
		"template-typo": {"apiVersion: serving.kubectl-llm.dev/v1alpha1\nkind: ModelServing\nmetadata: {name: ttypo}\nspec: {model: x, template: {spec: {nodeSelecter: {a: b}}}}\n",
			`unknown field "spec.nodeSelecter"`},
	} {
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(tc.manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		r := run(t, time.Now(), "-n", ns, "deploy", "-f", path)
		if r.Code != 1 || !strings.Contains(r.Err, tc.want) || !strings.Contains(r.Err, "-f "+path) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and %q", name, r.Code, r.Err, tc.want)
		}
	}
	var list v1.ModelServingList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil || len(list.Items) != 0 {
		t.Errorf("something was applied: %d servings (%v)", len(list.Items), err)
	}
}

// A name that cannot work is refused by the API server's rule, whose message deploy passes on.
func TestDeployRefusesANameThatCannotWork(t *testing.T) {
	ns := namespace(t, "deploy-bad-name")
	r := run(t, time.Now(), "-n", ns, "deploy", "llama-3", "--model", "meta-llama/Llama-3-8B")
	if r.Code != 1 || !strings.Contains(r.Err, "metadata.name must not end in -<number>") {
		t.Errorf("exit %d, stderr %q; want the name rule", r.Code, r.Err)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "llama-3"}, &v1.ModelServing{}); !apierrors.IsNotFound(err) {
		t.Errorf("the serving exists (err %v)", err)
	}
}

// A FailedCreate of the serving's StatefulSet reaches describe: the operator's Degraded reason
// and the event that explains it.
func TestDescribeShowsWhyGroupsCannotBeCreated(t *testing.T) {
	ns := namespace(t, "failed-create")
	ms := seedServing(t, ns, fixtures.Serving("qwen", ns).GroupSize(2))
	msg := `create Pod qwen-0-1 in StatefulSet qwen-0 failed error: pods "qwen-0-1" is forbidden: violates PodSecurity "restricted:latest"`
	writeStatus(t, ms, v1.ModelServingStatus{Phase: v1.PhaseDegraded, Conditions: []metav1.Condition{{
		Type: v1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1.ReasonFailedCreate, LastTransitionTime: metav1.Now(),
		Message: "statefulset qwen-0 cannot create its pods or StatefulSets: " + msg,
	}}})
	now := metav1.Now()
	create(t, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "qwen-0.fc", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "StatefulSet", Name: "qwen-0", Namespace: ns},
		Reason:         "FailedCreate", Type: corev1.EventTypeWarning, Message: msg, FirstTimestamp: now, LastTimestamp: now, Count: 1})
	r := run(t, time.Now(), "-n", ns, "describe", "qwen")
	expectCode(t, r, 0)
	for _, want := range []string{"Degraded   True     FailedCreate", "Warning   FailedCreate   statefulset/qwen-0", "violates PodSecurity"} {
		if !strings.Contains(r.Out, want) {
			t.Errorf("describe does not show %q:\n%s", want, r.Out)
		}
	}
}
