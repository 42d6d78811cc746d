package revision_test

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

func TestRevisionsRecordOnlyThePodAffectingSpec(t *testing.T) {
	ms := fixtures.Serving("qwen", "ns").Obj()
	r1 := revision.Name("qwen", fixtures.RevisionSpec(t, ms.Spec))
	scaled := ms.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](8)
	scaled.Spec.Rollout.Partition = ptr.To[int32](3)
	scaled.Spec.Restart = &v1.RestartSpec{ID: "x"}
	if r := revision.Name("qwen", fixtures.RevisionSpec(t, scaled.Spec)); r != r1 {
		t.Errorf("scaling, partition or restart made a new revision %s (was %s)", r, r1)
	}
	img := ms.DeepCopy()
	img.Spec.Engine.Image = "vllm/vllm-openai:v0.12.0"
	if r := revision.Name("qwen", fixtures.RevisionSpec(t, img.Spec)); r == r1 {
		t.Error("a new image did not make a new revision")
	}
	back := img.DeepCopy()
	if err := fixtures.RevisionSpec(t, ms.Spec).Into(&back.Spec); err != nil {
		t.Fatal(err)
	}
	if revision.Name("qwen", fixtures.RevisionSpec(t, back.Spec)) != r1 {
		t.Error("writing a revision back does not give the same revision")
	}
}

// Keeping spec.template raw in the API type must not change a revision hash: an upgraded operator
// would otherwise roll every serving. The hashes below were computed by the operator whose API
// type held a typed *corev1.PodTemplateSpec (commit 18a2890), for the same specs.
func TestRevisionHashesDidNotChangeWithTheRawTemplate(t *testing.T) {
	ms := fixtures.Serving("qwen", "ns").GPUs(2).GroupSize(2).Obj()
	if got := revision.Name(ms.Name, fixtures.RevisionSpec(t, ms.Spec)); got != "qwen-8d077c30bc" {
		t.Errorf("without a template: revision %s, was qwen-8d077c30bc", got)
	}
	ms.Spec.Template = fixtures.RawTemplate(`{"metadata":{"labels":{"team":"search"},"annotations":{"a":"b"}},
		"spec":{"nodeSelector":{"pool":"h100"},"containers":[{"name":"engine","env":[{"name":"HF_HUB_OFFLINE","value":"1"}],
		"resources":{"limits":{"memory":"64Gi"}}}]}}`)
	if got := revision.Name(ms.Name, fixtures.RevisionSpec(t, ms.Spec)); got != "qwen-1eb8868376" {
		t.Errorf("with a template: revision %s, was qwen-1eb8868376", got)
	}
	// Written back (rollout undo) and read again, it is the same revision.
	back := ms.DeepCopy()
	back.Spec.Template = nil
	if err := fixtures.RevisionSpec(t, ms.Spec).Into(&back.Spec); err != nil {
		t.Fatal(err)
	}
	if got := revision.Name(ms.Name, fixtures.RevisionSpec(t, back.Spec)); got != "qwen-1eb8868376" {
		t.Errorf("written back: revision %s, want qwen-1eb8868376", got)
	}
}

// A template that does not decode is an error naming the field, strictly: a typo is not ignored.
func TestDecodeTemplateNamesTheFieldItCannotDecode(t *testing.T) {
	cases := map[string]string{
		`{"spec": {"containers": 5}}`:                                                              "spec.template.spec.containers: must be a list, not a JSON number",
		`{"spec": {"nodeSelecter": {"a": "b"}}}`:                                                   `unknown field "spec.nodeSelecter"`,
		`{"spec": {"terminationGracePeriodSeconds": "x"}}`:                                         "spec.template.spec.terminationGracePeriodSeconds: must be a whole number",
		`{"metadata": {"labels": {"a": 1}}}`:                                                       "spec.template.metadata.labels",
		`{"spec": {"priority": 99999999999}}`:                                                      "spec.template.spec.priority: must be a whole number that fits int32",
		`{"spec": {"containers": [{"name": "engine", "resources": {"limits": {"cpu": "lots"}}}]}}`: "spec.template",
		`{"spec": {"hostNetwork": true, "hostNetwork": false}}`:                                    `duplicate field "spec.hostNetwork"`,
	}
	for js, want := range cases {
		_, err := v1.DecodeTemplate(fixtures.RawTemplate(js))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "spec.template") {
			t.Errorf("%s: err = %v, want it to name %q", js, err, want)
		}
		ms := fixtures.Serving("qwen", "ns").Obj()
		ms.Spec.Template = fixtures.RawTemplate(js)
		if _, err := revision.SpecOf(ms.Spec); err == nil {
			t.Errorf("%s: revision.SpecOf accepted it", js)
		}
	}
	if tmpl, err := v1.DecodeTemplate(fixtures.RawTemplate(`{}`)); err != nil || tmpl == nil {
		t.Errorf("an empty overlay: %v, %v; want an empty template", tmpl, err)
	}
}

// The revision names made for the longest serving name are valid label values (pkg/naming checks
// every other name derived from it).
func TestTheLongestServingNameMakesAValidRevisionLabel(t *testing.T) {
	longest := strings.Repeat("a", v1.MaxNameLength)
	name := revision.Name(longest, fixtures.RevisionSpec(t, fixtures.Serving(longest, "ns").Obj().Spec))
	if errs := validation.IsValidLabelValue(name); len(errs) > 0 {
		t.Errorf("revision label %s: %v", name, errs)
	}
}

// Same compares by content what Name compares by hash, so the CLI's comparisons (rollout undo,
// canary) decide as before without naming a revision.
func TestSameIsTheRevisionNameComparison(t *testing.T) {
	base := fixtures.Serving("qwen", "ns").GPUs(2).Obj()
	img := base.DeepCopy()
	img.Spec.Engine.Image = "vllm/vllm-openai:v0.12.0"
	scaled := base.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](8)
	tmpl := base.DeepCopy()
	tmpl.Spec.Template = fixtures.RawTemplate(`{"spec":{"nodeSelector":{"pool":"h100"}}}`)
	specs := []*v1.ModelServing{base, img, scaled, tmpl}
	for _, a := range specs {
		for _, b := range specs {
			ra, rb := fixtures.RevisionSpec(t, a.Spec), fixtures.RevisionSpec(t, b.Spec)
			if same, byName := revision.Same(ra, rb), revision.Name("qwen", ra) == revision.Name("qwen", rb); same != byName {
				t.Errorf("Same = %v, names equal = %v for %+v and %+v", same, byName, ra, rb)
			}
		}
	}
	// A revision read back from its ControllerRevision is the same as the spec it recorded.
	rs := fixtures.RevisionSpec(t, tmpl.Spec)
	cr, err := revision.NewControllerRevision(tmpl, rs, 1)
	if err != nil {
		t.Fatal(err)
	}
	back, err := revision.Decode(cr)
	if err != nil || !revision.Same(back, rs) {
		t.Errorf("decoded revision not the same: %v", err)
	}
	if revision.Same(back, fixtures.RevisionSpec(t, img.Spec)) {
		t.Error("a revision is the same as a spec with another image")
	}
}

// One revision covers every role: a change to one role's pods is a new revision of the whole
// serving, while a role's replicas, limits, canary partition and listing order are not.
func TestARevisionCoversEveryRoleButNotTheirScaleOrRollout(t *testing.T) {
	ms := fixtures.Serving("pd", "ns").Obj()
	ms.Spec.Roles = []v1.RoleSpec{
		{Name: v1.RolePrefill, Replicas: ptr.To[int32](2), Args: []string{"--enforce-eager"}},
		{Name: v1.RoleDecode, Replicas: ptr.To[int32](6)},
	}
	r1 := revision.Name("pd", fixtures.RevisionSpec(t, ms.Spec))

	scaled := ms.DeepCopy()
	scaled.Spec.Roles[1].Replicas = ptr.To[int32](8)
	scaled.Spec.Roles[0].Rollout = &v1.RoleRolloutSpec{Partition: ptr.To[int32](1)}
	scaled.Spec.Roles[0], scaled.Spec.Roles[1] = scaled.Spec.Roles[1], scaled.Spec.Roles[0]
	if r := revision.Name("pd", fixtures.RevisionSpec(t, scaled.Spec)); r != r1 {
		t.Errorf("scaling, a canary partition or the order of the roles made a new revision %s (was %s)", r, r1)
	}
	changed := ms.DeepCopy()
	changed.Spec.Roles[1].Resources.GPUs = ptr.To[int32](4)
	if r := revision.Name("pd", fixtures.RevisionSpec(t, changed.Spec)); r == r1 {
		t.Error("new GPUs for decode did not make a new revision")
	}
	without := ms.DeepCopy()
	without.Spec.Roles = nil
	if revision.Name("pd", fixtures.RevisionSpec(t, without.Spec)) == r1 {
		t.Error("the roles are not part of the revision")
	}

	// Undo writes each role's pods back and keeps its scale and rollout.
	back := changed.DeepCopy()
	back.Spec.Roles[1].Replicas = ptr.To[int32](9)
	if err := fixtures.RevisionSpec(t, ms.Spec).Into(&back.Spec); err != nil {
		t.Fatal(err)
	}
	if back.Spec.Roles[1].Resources.GPUs != nil || *back.Spec.Roles[1].Replicas != 9 {
		t.Errorf("written back: decode GPUs %v, replicas %d; want unset and 9", back.Spec.Roles[1].Resources.GPUs, *back.Spec.Roles[1].Replicas)
	}
	if got := revision.Name("pd", fixtures.RevisionSpec(t, back.Spec)); got != r1 {
		t.Errorf("written back: revision %s, want %s", got, r1)
	}
}

// The API server re-encodes a revision's data with sorted keys when it applies a JSON patch to
// the object (the garbage collector's orphaning does): recorded otherwise, the immutability check
// refuses the patch. The name (the hash) does not change with the encoding.
func TestRevisionDataIsRecordedWithSortedKeys(t *testing.T) {
	ms := fixtures.Serving("qwen", "ns").GPUs(2).GroupSize(2).Obj()
	spec, err := revision.SpecOf(ms.Spec)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := revision.NewControllerRevision(ms, spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(cr.Data.Raw, &generic); err != nil {
		t.Fatal(err)
	}
	sorted, _ := json.Marshal(generic)
	if string(sorted) != string(cr.Data.Raw) {
		t.Errorf("data not in sorted-key form:\n got %s\nwant %s", cr.Data.Raw, sorted)
	}
	if cr.Name != revision.Name("qwen", spec) {
		t.Errorf("name %s, want %s", cr.Name, revision.Name("qwen", spec))
	}
	back, err := revision.Decode(cr)
	if err != nil || !revision.Same(back, spec) {
		t.Errorf("decoded %+v (%v), want %+v", back, err, spec)
	}
}
