package operator

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// A pass decides on the serving as the cache holds it, which can be behind the API server. The
// one write of a child that such a pass must never make is giving a child back to a serving that
// was deleted with --cascade=orphan: the garbage collector releases the children (removes the
// serving's owner reference), then removes the orphan finalizer; a pass that re-owns a released
// child in between leaves a serving whose deletion looks like a plain one to finalize, which
// deletes the child the user meant to keep (the after-adopt fault case found it: the deletion at
// t, the release at t+135 ms, our apply at t+220 ms put the owner back).
//
// So a pass confirms with the API server that its serving is still live (same UID, no deletion
// timestamp) before its first write of a child, and writes over a child it read only at the
// resourceVersion it read (applyLWS, applyService, adopt): a deletion after the confirmation
// comes before its release, which then moves the child's resourceVersion and makes the write fail.
// An adoption always asks afresh: the child it adopts may have been read after the confirmation.
// The apply over a LeaderWorkerSet the pass read as ours asks nothing: the resourceVersion alone
// keeps it from re-owning a released one (a release moves it), whenever the deletion came, and a
// rollout's LWS then moves without waiting for a read of the serving.

// errServingNotLive: the serving this pass read from the cache is gone, deleted or replaced.
var errServingNotLive = errors.New("the serving is no longer live on the API server")

// liveness is one pass's knowledge that its serving is live.
type liveness struct {
	// mu: the revision is recorded beside the LeaderWorkerSet's apply (see act), and both may
	// ask.
	mu        sync.Mutex
	serving   *v1.ModelServing
	confirmed bool
}

type livenessKey struct{}

// beforeWrite confirms, once per pass, that the pass's serving is live; a context without a
// liveness record (finalize, which reads the API server itself) is not checked.
func (r *Reconciler) beforeWrite(ctx context.Context) error {
	l, _ := ctx.Value(livenessKey{}).(*liveness)
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.confirmed {
		return nil
	}
	if err := r.confirmLive(ctx, l.serving); err != nil {
		return err
	}
	l.confirmed = true
	return nil
}

// confirmLive asks the API server whether ms is still live: errServingNotLive when it is gone,
// has another UID or is being deleted.
func (r *Reconciler) confirmLive(ctx context.Context, ms *v1.ModelServing) error {
	cur := &v1.ModelServing{}
	err := r.live().Get(ctx, client.ObjectKeyFromObject(ms), cur)
	switch {
	case apierrors.IsNotFound(err):
		return errServingNotLive
	case err != nil:
		return fmt.Errorf("confirm the serving is live: %w", err)
	case cur.UID != ms.UID || !cur.DeletionTimestamp.IsZero():
		return errServingNotLive
	}
	return nil
}

// notLive ends a pass whose serving turned out to be gone, deleted or replaced: nothing is
// written; the event of that change, on its way through the cache, queues the next pass.
func (r *Reconciler) notLive(ctx context.Context) (ctrl.Result, error) {
	log.FromContext(ctx).V(1).Info("The serving changed on the API server since the cache read it; looking again")
	return ctrl.Result{RequeueAfter: conflictRetry}, nil
}
