package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// poisonServing is issue 11's object: the API server stores it, no typed client decodes it.
func poisonServing(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(), "kind": "ModelServing",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"model": "x", "template": map[string]any{"spec": map[string]any{"containers": int64(5)}}},
	}}
}

// Issue 11's poison object in a real cluster: the operator keeps serving the others (a serving
// created after it becomes Ready) and reports the poison one alone.
func TestAPoisonServingDoesNotStopTheOthers(t *testing.T) {
	calmTest(t)
	ctx := context.Background()
	ns := namespace(t)
	if err := kc.Create(ctx, poisonServing(ns, "evil")); err != nil {
		t.Fatal(err)
	}
	if err := kc.Create(ctx, newServing(ns, "good", 1, 2, 1)); err != nil {
		t.Fatal(err)
	}
	took := waitReady(t, ns, "good", settle)
	t.Logf("a serving beside the poison one was Ready %s after creation", took)
	testenv.Eventually(t, settle, "evil Degraded/InvalidSpec", func() (bool, error) {
		c := meta.FindStatusCondition(getServing(t, ns, "evil").Status.Conditions, v1.ConditionDegraded)
		return c != nil && c.Reason == v1.ReasonInvalidSpec && strings.Contains(c.Message, "spec.template.spec.containers"), fmt.Errorf("%+v", c)
	})
	out, err := kubectlLLM("-n", ns, "get")
	if err != nil || !strings.Contains(out, "evil") || !strings.Contains(out, "good") {
		t.Errorf("kubectl llm get: %v\n%s", err, out)
	}
}

// A pod the cluster refuses (here: a PriorityClass that does not exist, refused by the Priority
// admission plugin) is a Degraded FailedCreate naming the cause, not groups "not created yet".
func TestPodsTheClusterRefusesAreDegradedFailedCreate(t *testing.T) {
	calmTest(t)
	ctx := context.Background()
	ns := namespace(t)
	ms := newServing(ns, "qwen", 1, 2, 1)
	ms.Spec.Scheduling.PriorityClassName = "does-not-exist"
	if err := kc.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	var msg string
	took := testenv.Eventually(t, settle, "Degraded/FailedCreate", func() (bool, error) {
		c := meta.FindStatusCondition(getServing(t, ns, "qwen").Status.Conditions, v1.ConditionDegraded)
		if c == nil {
			return false, nil
		}
		msg = c.Message
		return c.Reason == v1.ReasonFailedCreate, fmt.Errorf("Degraded %s: %s", c.Reason, c.Message)
	})
	t.Logf("the refusal reached the status %s after creation: %s", took, msg)
	if !strings.Contains(msg, "does-not-exist") {
		t.Errorf("Degraded message %q does not name the PriorityClass", msg)
	}
	out, err := kubectlLLM("-n", ns, "describe", "qwen")
	if err != nil || !strings.Contains(out, "FailedCreate") {
		t.Errorf("describe: %v\n%s", err, out)
	}
}
