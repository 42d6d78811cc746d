package operator

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// A pass whose inputs are an earlier pass's, over a LeaderWorkerSet that carries what they built
// to, builds nothing: it keeps what the LWS is built from, for applyLWS to build only if it must
// write. Any input that changes the LWS builds it again.
func TestAPassOverUnchangedInputsBuildsNoLeaderWorkerSet(t *testing.T) {
	base := fixtures.Serving("qwen", "ns").Replicas(4).GroupSize(2).GPUs(1).Image("vllm/vllm-openai:v1").Generation(1).Obj()
	base.UID = "uid-1"
	rev := revName(t, base)
	observe := func(ms *v1.ModelServing, liveHash string) *observed {
		obs := &observed{serving: ms, revisions: []appsv1.ControllerRevision{recorded(t, ms, 1)}, service: &corev1.Service{}}
		obs.lws = liveLWS(t, ms, 4)
		obs.lws.Annotations = map[string]string{AnnotationAppliedHash: liveHash}
		for g := 0; g < 4; g++ {
			obs.pods = append(obs.pods, fixtures.Group(ms.Name, g, 2, rev)...)
		}
		return obs
	}
	built := &builtLWS{}
	in := computeInput{now: computeNow, built: built}

	first := compute(observe(base, "not-ours-yet"), in)
	if first.lws == nil || first.lwsKept != nil || first.lwsHash != IntentHash(first.lws) {
		t.Fatalf("first pass: lws built %v, kept %v, hash %q: want it built, with its hash", first.lws != nil, first.lwsKept != nil, first.lwsHash)
	}
	hash := first.lwsHash

	again := compute(observe(base, hash), in)
	if again.lws != nil || again.lwsKept == nil || again.lwsHash != hash {
		t.Fatalf("a pass over the same inputs, the live LWS carrying their hash: lws built %v, kept %v, hash %q: want nothing built, the inputs kept, hash %q",
			again.lws != nil, again.lwsKept != nil, again.lwsHash, hash)
	}
	rebuilt, err := DesiredLeaderWorkerSet(*again.lwsKept)
	if err != nil {
		t.Fatal(err)
	}
	if IntentHash(rebuilt) != hash {
		t.Errorf("what the pass kept builds to %s, want %s", IntentHash(rebuilt), hash)
	}

	cases := []struct {
		name     string
		change   func(ms *v1.ModelServing)
		liveHash string
	}{
		{"the live LWS carries another hash (someone else's apply)", func(*v1.ModelServing) {}, "other"},
		{"a new generation of the spec", func(ms *v1.ModelServing) { ms.Generation = 2 }, hash},
		{"another serving of the same name", func(ms *v1.ModelServing) { ms.UID = "uid-2" }, hash},
		// The group count is the plan's (a Recreate asks for none while the old groups stop), not
		// the spec's alone: the same generation can ask for another.
		{"another group count", func(ms *v1.ModelServing) { ms.Spec.Replicas = ptr.To[int32](5) }, hash},
		{"a pod annotation", func(ms *v1.ModelServing) {
			ms.Annotations = map[string]string{v1.AnnotationSimulatedLoadDelay: "30s"}
		}, hash},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &builtLWS{}
			cin := computeInput{now: computeNow, built: b}
			compute(observe(base, hash), cin) // remembers base's inputs
			ms := base.DeepCopy()
			c.change(ms)
			out := compute(observe(ms, c.liveHash), cin)
			if out.lws == nil || out.lwsKept != nil {
				t.Fatalf("lws built %v, kept %v: want it built", out.lws != nil, out.lwsKept != nil)
			}
			if out.lwsHash != IntentHash(out.lws) {
				t.Errorf("hash %q, want the built LWS's %q", out.lwsHash, IntentHash(out.lws))
			}
		})
	}

	// A serving gone is forgotten.
	built.forget(types.NamespacedName{Namespace: "ns", Name: "qwen"})
	if out := compute(observe(base, hash), in); out.lws == nil {
		t.Error("a pass after the serving was forgotten built nothing")
	}
}
