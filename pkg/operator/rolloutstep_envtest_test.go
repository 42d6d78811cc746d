package operator_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	lwsac "sigs.k8s.io/lws/client-go/applyconfiguration/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/operator"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
)

// A rollout's new template goes to the LeaderWorkerSet first, and its revision is recorded right
// after, not at the same moment: the apply is what the groups wait on, and on a busy API server
// two requests at once each take longer. Here the LeaderWorkerSet's apply is held for a moment:
// a record sent beside it (as from session 20 to 34) would be created before the apply is done.
func TestARolloutAppliesItsLeaderWorkerSetBeforeRecordingTheRevision(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ms := serving(ns, "qwen")
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	converged := waitConverged(t, ns, "qwen")
	// The pass reads the serving with a new image (the manager of the suite sees no change and
	// leaves it alone); everything else is the API server's.
	edited := converged.DeepCopy()
	edited.Spec.Engine.Image = "vllm/vllm-openai:rollout-step"
	var applied, createdBeforeApplied, created atomic.Bool
	c := interceptor.NewClient(watchClient(t), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if s, ok := o.(*v1.ModelServing); ok && key.Name == "qwen" {
				edited.DeepCopyInto(s)
				return nil
			}
			return c.Get(ctx, key, o, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, o runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			lws, ok := o.(*lwsac.LeaderWorkerSetApplyConfiguration)
			if !ok || lws.Name == nil || *lws.Name != "qwen" {
				return c.Apply(ctx, o, opts...)
			}
			time.Sleep(300 * time.Millisecond)
			err := c.Apply(ctx, o, opts...)
			applied.Store(true)
			return err
		},
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if _, ok := o.(*appsv1.ControllerRevision); ok {
				created.Store(true)
				if !applied.Load() {
					createdBeforeApplied.Store(true)
				}
			}
			return c.Create(ctx, o, opts...)
		},
	})
	r := &operator.Reconciler{Client: c, Live: env.Client, Scheme: env.Scheme, Clock: clock.RealClock{}}
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ms)}); err != nil {
		t.Fatalf("the pass failed: %v", err)
	}
	if !applied.Load() || !created.Load() {
		t.Fatalf("the pass applied a LeaderWorkerSet: %v, created a ControllerRevision: %v; want both", applied.Load(), created.Load())
	}
	if createdBeforeApplied.Load() {
		t.Error("the revision was recorded while the LeaderWorkerSet's apply was still under way: want the apply first")
	}
	lws := &lwsv1.LeaderWorkerSet{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ms), lws); err != nil {
		t.Fatal(err)
	}
	revs := &appsv1.ControllerRevisionList{}
	if err := env.Client.List(ctx, revs, revision.ListOptions(ns, "qwen")...); err != nil {
		t.Fatal(err)
	}
	rev := revisionLabel(lws)
	found := false
	for _, cr := range revs.Items {
		found = found || cr.Name == rev
	}
	if !found {
		t.Errorf("the LeaderWorkerSet runs revision %s, which no ControllerRevision records (%d of them)", rev, len(revs.Items))
	}
}
