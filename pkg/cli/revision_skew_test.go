package cli_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// seedOlderOperatorHistory records three revisions as an operator that names revisions otherwise
// would (another hash), and its status: current the first, update the third (the spec).
func seedOlderOperatorHistory(t *testing.T, ns string) []string {
	t.Helper()
	ms := seedServing(t, ns, fixtures.Serving("qwen", ns).Replicas(2).Image("vllm/vllm-openai:v0.12.0"))
	var names []string
	for i, img := range []string{"vllm/vllm-openai:v0.10.0", "vllm/vllm-openai:v0.11.0", "vllm/vllm-openai:v0.12.0"} {
		spec := ms.Spec.DeepCopy()
		spec.Engine.Image = img
		cr, err := revision.NewControllerRevision(ms, fixtures.RevisionSpec(t, *spec), int64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		cr.Name = fmt.Sprintf("qwen-older%05d", i+1)
		create(t, cr)
		names = append(names, cr.Name)
	}
	writeStatus(t, ms, v1.ModelServingStatus{CurrentRevision: names[0], UpdateRevision: names[2]})
	return names
}

// A plugin newer than the operator must show the operator's update revision, not one it hashes
// itself, and decide rollbacks by what the revisions contain.
func TestViewsShowTheOperatorsUpdateRevisionWhateverItsName(t *testing.T) {
	ns := namespace(t, "revision-skew")
	names := seedOlderOperatorHistory(t, ns)

	r := run(t, time.Now(), "-n", ns, "rollout", "history", "qwen")
	expectCode(t, r, 0)
	for _, want := range []string{names[0] + "   current", names[2] + "   update"} {
		if !strings.Contains(r.Out, want) {
			t.Errorf("history lacks %q:\n%s", want, r.Out)
		}
	}
	r = run(t, time.Now(), "-n", ns, "describe", "qwen")
	expectCode(t, r, 0)
	if !strings.Contains(r.Out, "Revisions:   current "+names[0]+", update "+names[2]+"\n") || strings.Contains(r.Out, "not recorded") {
		t.Errorf("describe does not show the operator's revisions:\n%s", r.Out)
	}

	// The previous revision is the newest one the spec is not, by content.
	r = run(t, time.Now(), "-n", ns, "rollout", "undo", "qwen")
	expectCode(t, r, 0)
	if got := getServing(t, ns, "qwen").Spec.Engine.Image; got != "vllm/vllm-openai:v0.11.0" || !strings.Contains(r.Out, "rolled back to revision 2") {
		t.Fatalf("undo: image %s, out %q; want revision 2 (v0.11.0)", got, r.Out)
	}
	r = run(t, time.Now(), "-n", ns, "rollout", "undo", "qwen", "--to-revision", "2")
	expectCode(t, r, 0)
	if !strings.Contains(r.Out, "skipped rollback") {
		t.Errorf("undo to the revision the spec already has printed %q", r.Out)
	}

	// Until the operator observes the edit, describe says its update revision is of the older spec.
	r = run(t, time.Now(), "-n", ns, "describe", "qwen")
	expectCode(t, r, 0)
	if !strings.Contains(r.Out, "update "+names[2]+" (of generation 1; generation 2 not observed yet)") || strings.Contains(r.Out, "not recorded yet") {
		t.Errorf("describe of an edit the operator has not seen:\n%s", r.Out)
	}
}

// canary abort compares the spec with the current revision by content, so it also knows there is
// nothing to abort when the operator names revisions otherwise.
func TestCanaryAbortKnowsTheSpecIsTheCurrentRevisionWhateverItsName(t *testing.T) {
	ns := namespace(t, "revision-skew-canary")
	names := seedOlderOperatorHistory(t, ns)
	writeStatus(t, getServing(t, ns, "qwen"), v1.ModelServingStatus{CurrentRevision: names[2], UpdateRevision: names[2]})
	r := run(t, time.Now(), "-n", ns, "canary", "abort", "qwen")
	expectCode(t, r, 1)
	if !strings.Contains(r.Err, "no canary to abort") {
		t.Errorf("abort with the spec at the current revision: %q", r.Err)
	}
}
