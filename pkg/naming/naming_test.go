package naming_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
)

// derivedNames are the names and label values made from a serving's name, by us and by
// LeaderWorkerSet v0.9.0 and the StatefulSet controller, for its highest group and worker:
//   - our Service <name>-api (a DNS-1035 label) and revision label <name>-<10 hex> (pkg/revision
//     checks the names it really makes);
//   - the LWS and its leader StatefulSet and headless Service <name> (DNS-1035, by the LWS webhook);
//   - group g's worker StatefulSet <name>-<g> (pkg/controllers/pod_controller.go names it after the
//     leader pod, which the leader StatefulSet names <name>-<g>), its pods <name>-<g>-<w>;
//   - the StatefulSet controller's pod label controller-revision-hash=<statefulset>-<hash>, the
//     hash up to 10 characters (k8s.io/kubernetes pkg/controller/history: a uint32, safe-encoded).
func derivedNames(name string) map[string]func(string) []string {
	hash10 := strings.Repeat("b", 10)
	lastGroup := "1999" // v1.MaxGroups-1: replicas up to 1000 plus a surge of up to as many again
	return map[string]func(string) []string{
		naming.ServiceName(name):              validation.IsDNS1035Label,
		name + "-" + strings.Repeat("f", 10):  validation.IsValidLabelValue, // serving.kubectl-llm.dev/revision
		name:                                  validation.IsDNS1035Label,
		name + "-" + lastGroup + "-63":        validation.IsDNS1123Label, // a worker pod's hostname
		name + "-" + hash10:                   validation.IsValidLabelValue,
		name + "-" + lastGroup + "-" + hash10: validation.IsValidLabelValue,
		"statefulset.kubernetes.io/pod-name=" + name + "-1999-63": func(s string) []string {
			return validation.IsValidLabelValue(strings.TrimPrefix(s, "statefulset.kubernetes.io/pod-name="))
		},
	}
}

func TestTheLongestNameFitsEveryDerivedNameAndOneMoreDoesNot(t *testing.T) {
	longest := strings.Repeat("a", v1.MaxNameLength)
	for derived, valid := range derivedNames(longest) {
		if errs := valid(derived); len(errs) > 0 {
			t.Errorf("%s (from a %d-character name): %v", derived, len(longest), errs)
		}
	}
	tooLong := longest + "a"
	broken := 0
	for derived, valid := range derivedNames(tooLong) {
		if len(valid(derived)) > 0 {
			broken++
		}
	}
	if broken == 0 {
		t.Errorf("a %d-character name fits every derived name: MaxNameLength %d is not the maximum", len(tooLong), v1.MaxNameLength)
	}
}

func TestServingOfWorkload(t *testing.T) {
	for _, tc := range []struct{ kind, name, want string }{
		{"LeaderWorkerSet", "qwen", "qwen"},
		{"StatefulSet", "qwen", "qwen"},
		{"StatefulSet", "qwen-12", "qwen"},
		{"StatefulSet", "qwen3-8b", "qwen3-8b"},
		{"StatefulSet", "my-api-0", "my-api"},
		{"Pod", "qwen-0", ""},
	} {
		if got := naming.ServingOfWorkload(tc.kind, tc.name); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.kind, tc.name, got, tc.want)
		}
	}
}
