package operator

import (
	"testing"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// A typed overlay always carries containers: null, which as a merge patch would delete every
// generated container: a template of labels alone must leave the engine container in place.
func TestATemplateOfLabelsAloneKeepsTheEngineContainer(t *testing.T) {
	ms := fixtures.Serving("qwen", "ns").Obj()
	ms.Spec.Template = fixtures.RawTemplate(`{"metadata":{"labels":{"team":"search"}}}`)
	overlay, err := v1.DecodeTemplate(ms.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := PodTemplate(TemplateInput{Name: "qwen", Revision: "r", Spec: ms.Spec, Overlay: overlay}, Leader)
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Name != naming.EngineContainer || pod.Labels["team"] != "search" {
		t.Errorf("containers %v, labels %v; want the engine container and team=search", pod.Spec.Containers, pod.Labels)
	}
}
