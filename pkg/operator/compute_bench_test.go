package operator

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// BenchmarkComputeConvergedPass is what a pass of a converged serving (4 groups of 2, every pod
// Ready) spends deciding that nothing is to be written: compute, then the hashes applyLWS and
// applyService compare with the children's; each LeaderWorkerSet built again, or remembered
// (builtLWS). Most passes of a running serving are this one (a
// pod's event, a LeaderWorkerSet's status); docs/performance.md reports it.
func BenchmarkComputeConvergedPass(b *testing.B) {
	ms := fixtures.Serving("qwen", "ns").Replicas(4).GroupSize(2).GPUs(1).Image("vllm/vllm-openai:v1").Generation(1).Obj()
	ms.UID = "uid-1"
	rev := revName(b, ms)
	cr, err := revision.NewControllerRevision(ms, fixtures.RevisionSpec(b, ms.Spec), 1)
	if err != nil {
		b.Fatal(err)
	}
	obs := &observed{serving: ms, revisions: []appsv1.ControllerRevision{*cr}, service: &corev1.Service{}}
	obs.lws = liveLWS(b, ms, 4)
	for g := 0; g < 4; g++ {
		obs.pods = append(obs.pods, fixtures.Group(ms.Name, g, 2, rev)...)
	}
	remembered := &builtLWS{}
	first := compute(obs, computeInput{now: computeNow, built: remembered})
	obs.lws.Annotations = map[string]string{AnnotationAppliedHash: first.lwsHash}
	for _, c := range []struct {
		name string
		in   computeInput
	}{
		{"built each pass", computeInput{now: computeNow}},
		{"remembered", computeInput{now: computeNow, built: remembered}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out := compute(obs, c.in)
				if out.specErr != nil || (out.lws == nil) == (out.lwsRebuild == nil) || out.createRevision != nil {
					b.Fatalf("not a converged pass: %+v", out)
				}
				hash := out.lwsHash
				if hash == "" {
					hash = IntentHash(out.lws)
				}
				if hash != first.lwsHash || IntentHash(out.service) == "" {
					b.Fatalf("hash %q, want %q", hash, first.lwsHash)
				}
			}
		})
	}
}
