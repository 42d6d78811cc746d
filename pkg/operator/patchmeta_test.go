package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// Our writes of a serving (its finalizer, its status) ask the API server for its metadata alone
// in return, not the whole serving to decode, and the pass goes on with the metadata the API
// server returned: the status is written over the resourceVersion the finalizer's write made, and
// the pass remembers the one the status write made (which tells our own write's echo apart).
func TestWritesOfAServingAskForItsMetadataAlone(t *testing.T) {
	ctx := context.Background()
	ms := fixtures.Serving("bad", "default").Replicas(1).GroupSize(1).Obj()
	// A spec that cannot be served: the pass writes its finalizer and its status, nothing else.
	ms.Spec.Template = fixtures.RawTemplate(`{"metadata":{"labels":{"serving.kubectl-llm.dev/name":"someone-else"}}}`)
	key := types.NamespacedName{Namespace: "default", Name: "bad"}
	base := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithStatusSubresource(&v1.ModelServing{}).WithObjects(ms).Build()
	var asked []string
	var overRV string // the serving's resourceVersion when its status is written
	c := interceptor.NewClient(base, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			asked = append(asked, fmt.Sprintf("%T", o))
			return c.Patch(ctx, o, p, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			asked = append(asked, fmt.Sprintf("%s %T", sub, o))
			now := &v1.ModelServing{}
			if err := c.Get(ctx, key, now); err != nil {
				return err
			}
			overRV = now.ResourceVersion
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	})
	r := &Reconciler{Client: c, Scheme: testenv.Scheme(), Clock: clocktesting.NewFakeClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))}
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); !errors.Is(err, reconcile.TerminalError(nil)) {
		t.Fatalf("pass over a spec that cannot be served: error %v, want a terminal one", err)
	}
	want := []string{"*v1.PartialObjectMetadata", "status *v1.PartialObjectMetadata"}
	if !slices.Equal(asked, want) {
		t.Fatalf("the pass's writes asked for %q in return, want %q", asked, want)
	}
	got := &v1.ModelServing{}
	if err := base.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got.Finalizers, v1.FinalizerChildren) || got.Status.ObservedGeneration == 0 && len(got.Status.Conditions) == 0 {
		t.Fatalf("the writes did not land: finalizers %v, status %+v", got.Finalizers, got.Status)
	}
	v, ok := r.statusWritten.Load(key)
	if !ok {
		t.Fatal("the pass remembers no status write")
	}
	own := v.(ownStatus)
	if own.over != overRV {
		t.Errorf("the status was written over resourceVersion %q as the pass knew it, want %q (the finalizer write's)", own.over, overRV)
	}
	if own.rv != got.ResourceVersion {
		t.Errorf("the pass remembers its status write at resourceVersion %q, want %q (the write's)", own.rv, got.ResourceVersion)
	}
}
