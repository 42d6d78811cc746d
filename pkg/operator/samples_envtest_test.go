package operator_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/pkg/roleplan"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// simGPUs is the simulated cluster's GPUs (hack/sim.sh: SIM_NODES 4 × SIM_GPUS 8), which the
// demos run on.
const simGPUs = 4 * 8

// TestTheSamplesAreAcceptedAndFitTheDemo: every sample decodes strictly, is accepted by the API
// server (the CRD's schema and CEL), gives a revision, fits the simulated cluster's GPUs with its
// rollout's surge, and the roles sample's rollout (make demo-pd) runs to the end without a hold.
func TestTheSamplesAreAcceptedAndFitTheDemo(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "config", "samples", "*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("samples %v (%v), want demo.yaml and demo-pd.yaml", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var ms v1.ModelServing
			if err := yaml.UnmarshalStrict(raw, &ms); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			ms.Namespace = namespace(t)
			if err := env.Client.Create(context.Background(), &ms); err != nil {
				t.Fatalf("%s refused: %v", file, err)
			}
			if _, err := revision.SpecOf(ms.Spec); err != nil {
				t.Errorf("%s makes no revision: %v", file, err)
			}
			roles, err := roleplan.RolesOf(ms.Spec)
			if err != nil {
				t.Fatal(err)
			}
			gpus := int32(0)
			for _, name := range v1.RoleNames() {
				spec, ok := ms.Spec.ForRole(name)
				if ok {
					gpus += podGPUs(spec)
				}
			}
			if len(roles) == 0 {
				gpus = podGPUs(ms.Spec)
			}
			if gpus > simGPUs {
				t.Errorf("%s needs %d GPUs with its surge; the simulated cluster has %d", file, gpus, simGPUs)
			}
			if ms.Name != "demo-pd" {
				return
			}
			if len(roles) != 2 || roles[0].Desired != 2 || roles[1].Desired != 6 {
				t.Errorf("roles = %+v, want 2 prefill and 6 decode groups", roles)
			}
			// make demo-pd sets a new image on every group ready: the plan runs to its end.
			for i := range roles {
				roles[i].Old = roles[i].Desired
			}
			steps := roleplan.Steps(roleplan.Input{Roles: roles, Strategy: ms.Spec.Rollout.Strategy, RollingOut: true})
			if n := len(steps); n < 2 || steps[0].Steps != 6 || steps[n-2].Step != steps[n-2].Steps || steps[n-1].State != roleplan.Complete {
				t.Errorf("the demo's rollout plan %+v: want 6 steps, the last one done, and no hold", steps)
			}
		})
	}
}

// podGPUs is the GPUs a serving without roles (or one role's spec) asks for with its surge
// groups: (replicas + maxSurge) × groupSize × gpus.
func podGPUs(spec v1.ModelServingSpec) int32 {
	replicas := ptr.Deref(spec.Replicas, 1)
	surge, _ := roleplan.Resolve(spec.Rollout.MaxSurge, replicas, true)
	return (replicas + surge) * max(spec.GroupSize, 1) * ptr.Deref(spec.Resources.GPUs, 0)
}
