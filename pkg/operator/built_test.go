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
	if first.lws == nil || first.lwsRebuild != nil || first.lwsHash != IntentHash(first.lws) {
		t.Fatalf("first pass: lws built %v, kept %v, hash %q: want it built, with its hash", first.lws != nil, first.lwsRebuild != nil, first.lwsHash)
	}
	hash := first.lwsHash

	again := compute(observe(base, hash), in)
	if again.lws != nil || again.lwsRebuild == nil || again.lwsHash != hash {
		t.Fatalf("a pass over the same inputs, the live LWS carrying their hash: lws built %v, kept %v, hash %q: want nothing built, the inputs kept, hash %q",
			again.lws != nil, again.lwsRebuild != nil, again.lwsHash, hash)
	}
	rebuilt, err := again.lwsRebuild()
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
			if out.lws == nil || out.lwsRebuild != nil {
				t.Fatalf("lws built %v, kept %v: want it built", out.lws != nil, out.lwsRebuild != nil)
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

// A serving with roles remembers each role's LeaderWorkerSet as a serving without roles does its
// own: a converged pass builds neither, a step of the planner (another partition) builds again.
func TestARoleServingsPassOverUnchangedInputsBuildsNoLeaderWorkerSet(t *testing.T) {
	ms := fixtures.Serving("qwen", "ns").Roles(2, 6, 2).GPUs(1).Image("vllm/vllm-openai:v1").Generation(1).Obj()
	ms.UID = "uid-1"
	rev := revName(t, ms)
	ms.Status.UpdateRevision, ms.Status.CurrentRevision = rev, rev
	built := &builtLWS{}
	in := computeInput{now: computeNow, built: built}
	converged := func(hashes map[v1.RoleName]string) *observed {
		obs := pdObserved(ms.DeepCopy(), pdPods(2, 6, rev, rev), rev, 0, 0, recorded(t, ms, 1))
		for i := range obs.roles {
			obs.roles[i].lws.Annotations = map[string]string{AnnotationAppliedHash: hashes[obs.roles[i].name]}
		}
		return obs
	}
	first := compute(converged(nil), in)
	hashes := map[v1.RoleName]string{}
	for _, ri := range first.roles {
		if ri.lws == nil || ri.rebuild != nil || ri.hash != IntentHash(ri.lws) {
			t.Fatalf("first pass, role %s: lws built %v, rebuild %v, hash %q: want it built, with its hash", ri.name, ri.lws != nil, ri.rebuild != nil, ri.hash)
		}
		hashes[ri.name] = ri.hash
	}
	again := compute(converged(hashes), in)
	if len(again.roles) != 2 {
		t.Fatalf("%d roles, want 2", len(again.roles))
	}
	for _, ri := range again.roles {
		if ri.lws != nil || ri.rebuild == nil || ri.hash != hashes[ri.name] {
			t.Fatalf("a pass over the same inputs, role %s: lws built %v, rebuild %v, hash %q: want nothing built, hash %q",
				ri.name, ri.lws != nil, ri.rebuild != nil, ri.hash, hashes[ri.name])
		}
		rebuilt, err := ri.rebuild()
		if err != nil {
			t.Fatal(err)
		}
		if IntentHash(rebuilt) != hashes[ri.name] {
			t.Errorf("role %s: what the pass kept builds to %s, want %s", ri.name, IntentHash(rebuilt), hashes[ri.name])
		}
	}
	// One role's live LWS carries another hash (someone else's apply): that role builds again.
	other := map[v1.RoleName]string{v1.RolePrefill: "other", v1.RoleDecode: hashes[v1.RoleDecode]}
	for _, ri := range compute(converged(other), in).roles {
		if built := ri.lws != nil; built != (ri.name == v1.RolePrefill) {
			t.Errorf("role %s: built %v; want only prefill, whose live LWS carries another hash, built", ri.name, built)
		}
	}
	// A new image: the planner moves one group of each role to the new revision (step 1), and
	// both roles build. Once step 1 is ready, decode moves on (another partition, the same
	// generation and revision) and builds again; prefill stays where it is and builds nothing.
	v2 := fixtures.Serving("qwen", "ns").Roles(2, 6, 2).GPUs(1).Image("vllm/vllm-openai:v2").Generation(2).Obj()
	v2.UID = "uid-1"
	v2.Status.UpdateRevision, v2.Status.CurrentRevision = rev, rev
	v2rev := revName(t, v2)
	withHashes := func(obs *observed, hashes map[v1.RoleName]string) *observed {
		for i := range obs.roles {
			obs.roles[i].lws.Annotations = map[string]string{AnnotationAppliedHash: hashes[obs.roles[i].name]}
		}
		return obs
	}
	step1 := compute(withHashes(pdObserved(v2.DeepCopy(), pdPods(2, 6, rev, v2rev), rev, 0, 0, recorded(t, ms, 1)), hashes), in)
	step1Hashes := map[v1.RoleName]string{}
	for _, ri := range step1.roles {
		if ri.lws == nil || ri.hash == hashes[ri.name] {
			t.Errorf("role %s after a new image: built %v, hash %q: want it built to a new hash", ri.name, ri.lws != nil, ri.hash)
		}
		step1Hashes[ri.name] = ri.hash
	}
	step2 := compute(withHashes(pdObserved(v2.DeepCopy(), pdPods(1, 5, rev, v2rev), v2rev, 1, 5, recorded(t, ms, 1), recorded(t, v2, 2)), step1Hashes), in)
	for _, ri := range step2.roles {
		moved := ri.name == v1.RoleDecode
		if built := ri.lws != nil; built != moved {
			t.Errorf("step 2, role %s: built %v; want only decode, whose partition moves, built", ri.name, built)
		}
		if moved && ri.lws != nil && ptr.Deref(ri.lws.Spec.RolloutStrategy.RollingUpdateConfiguration.Partition, -1) != 4 {
			t.Errorf("step 2, decode: partition %d, want 4", ptr.Deref(ri.lws.Spec.RolloutStrategy.RollingUpdateConfiguration.Partition, -1))
		}
	}
	// A serving gone is forgotten, its roles too.
	built.forget(types.NamespacedName{Namespace: "ns", Name: "qwen"})
	for _, ri := range compute(converged(hashes), in).roles {
		if ri.lws == nil {
			t.Errorf("role %s: a pass after the serving was forgotten built nothing", ri.name)
		}
	}
}
