package operator

import (
	"context"
	"errors"
	"fmt"

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
// rollout's LWS then moves without waiting for a read of the serving. Nor does a new serving's
// LeaderWorkerSet create (see liveness.first): a create gives nothing back. Nor do the revision
// records: their create gives nothing back either (a record made for a serving deleted meanwhile
// is owned by its UID and collected with it, see beforeCreate), and a prune deletes a record at
// the resourceVersion the pass read, which a release moves. So a rollout's pass, and the pass
// that prunes after it, ask the API server nothing of their serving.

// errServingNotLive: the serving this pass read from the cache is gone, deleted or replaced.
var errServingNotLive = errors.New("the serving is no longer live on the API server")

// liveness is one pass's knowledge that its serving is live.
type liveness struct {
	// The pass's writes are made one after another (see act), so nothing here is shared.
	serving   *v1.ModelServing
	confirmed bool
	// finalizer is the write of our finalizer in a serving's first pass, once made by finalizing
	// (writeFinalizer nil on the other passes): its success confirms the serving live, so
	// beforeWrite asks nothing more.
	finalizer      *finalizerWrite
	writeFinalizer func() *finalizerWrite
	// first: the serving had no finalizer of ours when the pass read it, so the pass made none
	// of its children yet (see firstPass).
	first bool
}

// A serving's first pass (no finalizer of ours yet: it was just created) is the step in that the
// serving's groups wait on, so it asks the API server nothing before its LeaderWorkerSet:
//   - a child the cache does not hold is not looked for on the API server. The cache holds every
//     object with our labels; what it cannot show is an object of someone else with the child's
//     name, and the create tells of that: every create of a child is create-only (createOnly),
//     and one refused sends the pass to look again, with reads (errLookAgain), by when the
//     finalizer is there;
//   - the LeaderWorkerSet's create comes before the finalizer's write: a new child of a serving
//     deleted meanwhile is owned by its UID and collected with it, and the one write this file
//     guards against, giving a released child back, is not a create. The finalizer is written
//     by the pass's first write after it (the revision's record, see beforeWrite), or after act.
//     After, not beside: on a busy API server two writes at once each take longer, and in a
//     burst the creates came later (session 17 measured the finalizer beside the create).
// The trace of session 26 put the reads (3.5 + 3.7 ms) beside the finalizer (8 ms), then the
// LeaderWorkerSet's apply: about 21 ms from the serving's event to the LeaderWorkerSet's.

// finalizerWrite is the write of our finalizer to a copy of the serving.
type finalizerWrite struct {
	serving *v1.ModelServing // the copy, with the finalizer and its resourceVersion once written
	err     error
}

// finalizing returns the first pass's write of the finalizer, made now if it was not yet; nil on
// the other passes.
func (l *liveness) finalizing() *finalizerWrite {
	if l.finalizer == nil && l.writeFinalizer != nil {
		l.finalizer = l.writeFinalizer()
	}
	return l.finalizer
}

// passLiveness is the liveness record of the pass ctx belongs to, nil outside one.
func passLiveness(ctx context.Context) *liveness {
	l, _ := ctx.Value(livenessKey{}).(*liveness)
	return l
}

// firstPass: ctx is a serving's first pass (see liveness.first).
func firstPass(ctx context.Context) bool {
	l := passLiveness(ctx)
	return l != nil && l.first
}

// errLookAgain: a create-only write found an object with the child's name (someone else's, or
// ours before the cache saw it), or could not be made for another reason: the serving's next
// pass reads the API server and decides with what it finds.
type errLookAgain struct{ err error }

func (e *errLookAgain) Error() string { return "look again: " + e.err.Error() }
func (e *errLookAgain) Unwrap() error { return e.err }

// createOnly makes an apply a create: it carries, as its resourceVersion precondition, one that
// no other object can hold, the serving's own (a resourceVersion is the storage revision of the
// object's last write, and each revision is one write of one object). The API server creates an
// object that is not there whatever resourceVersion the apply carries, and refuses it with a
// Conflict when any object has the name: a server-side apply on its own would take it over.
func createOnly(serving *v1.ModelServing) string {
	return serving.ResourceVersion
}

type livenessKey struct{}

// beforeWrite confirms, once per pass, that the pass's serving is live; a context without a
// liveness record (finalize, which reads the API server itself) is not checked.
func (r *Reconciler) beforeWrite(ctx context.Context) error {
	l := passLiveness(ctx)
	if l == nil {
		return nil
	}
	if l.confirmed {
		return nil
	}
	if f := l.finalizing(); f != nil {
		// The finalizer patch is an optimistic write: once through, the serving was live as
		// this pass read it.
		if f.err != nil {
			return f.err
		}
		l.confirmed = true
		return nil
	}
	if err := r.confirmLive(ctx, l.serving); err != nil {
		return err
	}
	l.confirmed = true
	return nil
}

// beforeCreate is what the create of a revision record asks first. Nothing of the API server: a
// create gives no released child back, and a record made for a serving deleted meanwhile is owned
// by its UID, so the garbage collector takes it with the serving (or after it, when the serving
// went with --cascade=orphan: the record was not there to be kept). In a serving's first pass the
// finalizer's write comes first, as before the pass's other writes after the LeaderWorkerSet's
// (see liveness.first).
func (r *Reconciler) beforeCreate(ctx context.Context) error {
	if l := passLiveness(ctx); l == nil || l.writeFinalizer == nil {
		return nil
	}
	return r.beforeWrite(ctx)
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
