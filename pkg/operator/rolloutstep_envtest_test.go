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

// A rollout's new template goes to the LeaderWorkerSet while its revision is being recorded, not
// after: the step from the serving to LWS is one request (the apply) rather than three (the
// serving's liveness, the record, the apply). Here the record's create waits until the apply has
// been sent; were the apply to wait for the record, the create would wait in vain.
func TestARolloutAppliesItsLeaderWorkerSetWhileTheRevisionIsRecorded(t *testing.T) {
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
	applied := make(chan struct{})
	var appliedOnce atomic.Bool
	var createWaited atomic.Int64
	c := interceptor.NewClient(watchClient(t), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if s, ok := o.(*v1.ModelServing); ok && key.Name == "qwen" {
				edited.DeepCopyInto(s)
				return nil
			}
			return c.Get(ctx, key, o, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, o runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if lws, ok := o.(*lwsac.LeaderWorkerSetApplyConfiguration); ok && lws.Name != nil && *lws.Name == "qwen" && appliedOnce.CompareAndSwap(false, true) {
				close(applied)
			}
			return c.Apply(ctx, o, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if _, ok := o.(*appsv1.ControllerRevision); ok {
				start := time.Now()
				select {
				case <-applied:
				case <-time.After(5 * time.Second):
				}
				createWaited.Store(int64(time.Since(start)))
			}
			return c.Create(ctx, o, opts...)
		},
	})
	r := &operator.Reconciler{Client: c, Live: env.Client, Scheme: env.Scheme, Clock: clock.RealClock{}}
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ms)}); err != nil {
		t.Fatalf("the pass failed: %v", err)
	}
	if !appliedOnce.Load() {
		t.Fatal("the pass applied no LeaderWorkerSet")
	}
	if waited := time.Duration(createWaited.Load()); waited >= 5*time.Second {
		t.Errorf("the revision's create waited %s for the LeaderWorkerSet's apply: the apply waited for the record", waited)
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
