package operator

import (
	"bytes"
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// oneRevisionPerTemplate keeps the embedded LWS from recording a template it has recorded already.
//
// The LeaderWorkerSet controller records its template in a ControllerRevision before it makes the
// leader StatefulSet, and looks that revision up by the key the leader StatefulSet carries. A pass
// that made the revision but not the StatefulSet (the operator killed between the two, found by
// the lws-after-create-controllerrevision fault case; or the StatefulSet's write refused) leaves a
// revision no StatefulSet names yet, and the next pass, finding no key, records the same template
// again under the next number. From then on every pass of that LeaderWorkerSet logs "More than one
// revision exists for the given template hash" at error level with a stack trace (60 lines of one
// CI log were that). Upstream's own comment says only one should ever match; this client makes it
// so: a create of a LeaderWorkerSet's ControllerRevision whose template key that LeaderWorkerSet
// has a revision of already, with the same data, returns that revision instead.
//
// It looks in the manager's cache, which holds every revision LWS made (by LWS's label): a LIST
// of the API server for each new LeaderWorkerSet cost a request per serving in a burst (81 ms
// each under the scale harness's load). After a restart the cache is synced before any pass, so
// the crash case is covered; a create retried faster than the cache sees the first one is not
// (upstream's own lookup, from the same cache, misses it too).
type oneRevisionPerTemplate struct {
	client.Client
}

func (c oneRevisionPerTemplate) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if rev, ok := obj.(*appsv1.ControllerRevision); ok {
		if have, err := c.recorded(ctx, rev); err != nil {
			return err
		} else if have != nil {
			log.FromContext(ctx).V(1).Info("The LeaderWorkerSet's template is recorded already; not recording it twice",
				"revision", have.Name, "instead of", rev.Name)
			have.DeepCopyInto(rev)
			return nil
		}
	}
	return c.Client.Create(ctx, obj, opts...)
}

// recorded is the LeaderWorkerSet's revision of rev's template key with rev's data (the
// highest numbered, should there be several), or nil.
func (c oneRevisionPerTemplate) recorded(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	set, key := rev.Labels[lwsv1.SetNameLabelKey], rev.Labels[lwsv1.RevisionKey]
	owner := metav1.GetControllerOfNoCopy(rev)
	if set == "" || key == "" || owner == nil || owner.Kind != "LeaderWorkerSet" {
		return nil, nil
	}
	var list appsv1.ControllerRevisionList
	if err := c.Client.List(ctx, &list, client.InNamespace(rev.Namespace),
		client.MatchingLabels{lwsv1.SetNameLabelKey: set, lwsv1.RevisionKey: key}); err != nil {
		return nil, err
	}
	var have *appsv1.ControllerRevision
	for i := range list.Items {
		r := &list.Items[i]
		ref := metav1.GetControllerOfNoCopy(r)
		if ref == nil || ref.UID != owner.UID || !r.DeletionTimestamp.IsZero() || !bytes.Equal(r.Data.Raw, rev.Data.Raw) {
			continue
		}
		if have == nil || r.Revision > have.Revision {
			have = r
		}
	}
	return have, nil
}
