package operator

import (
	"context"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// A rollout gives a group a new leader pod while the previous leader's workers are still going:
// the StatefulSet controller deletes the old leader, the garbage collector then deletes the old
// worker StatefulSet and, after it, its pods (each taking its grace period on a real node). LWS
// makes the new leader's worker StatefulSet as soon as the old one is gone, and the StatefulSet
// controller cannot create a worker whose name an old pod still holds ("already exists"): it
// tries again after a backoff that doubles from 5 ms. The old pod's deletion does not wake it
// either (the pod's owner is the old StatefulSet, another UID). So the worker comes up to as long
// after the old pod went as the old pod lingered: a group's new leader stood Ready without its
// worker for more than 3 minutes on the simulated cluster while the garbage collector was busy
// with a deleted namespace, and a worker with a 30 s grace period costs a rollout step up to 30 s
// more. The operator remembers each worker name held by a previous leader's pod and, when that
// pod is gone after holding it for heldLong or more, touches the new worker StatefulSet (an
// annotation): the StatefulSet controller syncs a StatefulSet at each of its updates, at once.

// heldLong is how long a previous leader's pod must have held a worker's name before its going
// touches the new worker StatefulSet. Under it, the StatefulSet controller's backoff is as short
// and it tries again by itself within about as long: no write is needed.
const heldLong = time.Second

// heldWorker is a worker name held by a previous leader's pod.
type heldWorker struct {
	// uid is the pod holding the name.
	uid types.UID
	// leader and leaderUID are the group's current leader pod, after which its worker
	// StatefulSet is named and by which it is owned.
	leader    string
	leaderUID types.UID
	// since is when a pass first saw the name held.
	since time.Time
}

// heldWorkerNames are the worker pods of pods that are of their group's previous leader
// (status.WorkerOfPreviousLeader) while the group has a live leader, by name: each holds the name
// of a worker the current leader's StatefulSet must make. since is left zero.
func heldWorkerNames(pods []corev1.Pod) map[string]heldWorker {
	type groupKey struct{ set, group string }
	leaders := map[groupKey]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		if p.Labels[lwsv1.WorkerIndexLabelKey] == "0" && p.DeletionTimestamp == nil {
			leaders[groupKey{p.Labels[lwsv1.SetNameLabelKey], p.Labels[lwsv1.GroupIndexLabelKey]}] = p
		}
	}
	held := map[string]heldWorker{}
	for i := range pods {
		p := &pods[i]
		wi, err := strconv.Atoi(p.Labels[lwsv1.WorkerIndexLabelKey])
		if err != nil || wi < 1 {
			continue
		}
		leader := leaders[groupKey{p.Labels[lwsv1.SetNameLabelKey], p.Labels[lwsv1.GroupIndexLabelKey]}]
		if leader == nil || p.Name != leader.Name+"-"+strconv.Itoa(wi) || !status.WorkerOfPreviousLeader(leader, p) {
			continue
		}
		held[p.Name] = heldWorker{uid: p.UID, leader: leader.Name, leaderUID: leader.UID}
	}
	return held
}

// workerHolds are the held worker names each serving's passes have seen, by serving.
type workerHolds struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[string]heldWorker
}

// update takes a pass's pods of the serving key at now and returns the holds that ended for good:
// their pod is gone after holding the name for heldLong or more, and the group still has the
// leader it had then. Holds still standing are kept, new ones begin at now, and the others
// (the name taken by a new pod, the leader changed, held too short) are dropped.
func (h *workerHolds) update(key types.NamespacedName, pods []corev1.Pod, now time.Time) []heldWorker {
	current := heldWorkerNames(pods)
	h.mu.Lock()
	defer h.mu.Unlock()
	prev := h.m[key]
	if len(prev) == 0 && len(current) == 0 {
		return nil // most passes
	}
	uids := make(map[string]types.UID, len(pods))
	live := map[types.UID]bool{}
	for i := range pods {
		uids[pods[i].Name] = pods[i].UID
		if pods[i].DeletionTimestamp == nil {
			live[pods[i].UID] = true
		}
	}
	var ended []heldWorker
	for name, hold := range prev {
		uid, exists := uids[name]
		if exists && uid == hold.uid {
			continue // still held
		}
		if !exists && live[hold.leaderUID] && now.Sub(hold.since) >= heldLong {
			ended = append(ended, hold)
		}
		delete(prev, name)
	}
	for name, hold := range current {
		if _, ok := prev[name]; ok {
			continue
		}
		if prev == nil {
			prev = map[string]heldWorker{}
		}
		hold.since = now
		prev[name] = hold
	}
	if len(prev) == 0 {
		delete(h.m, key)
	} else {
		if h.m == nil {
			h.m = map[types.NamespacedName]map[string]heldWorker{}
		}
		h.m[key] = prev
	}
	return ended
}

// forget drops a serving's holds (the serving is gone).
func (h *workerHolds) forget(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, key)
}

// retryHeldWorkers follows the worker names the serving's pods hold (see heldWorker) and touches
// the worker StatefulSet of each hold that ended, so that the StatefulSet controller makes the
// worker now. A failure is logged, never the pass's: the StatefulSet controller still makes the
// worker after its backoff.
func (r *Reconciler) retryHeldWorkers(ctx context.Context, ms *v1.ModelServing, pods []corev1.Pod) {
	for _, hold := range r.holds.update(client.ObjectKeyFromObject(ms), pods, r.Clock.Now()) {
		if err := r.retryWorkerSet(ctx, ms.Namespace, hold); err != nil {
			if apierrors.IsForbidden(err) {
				r.noWorkerRetry.Do(func() {
					log.FromContext(ctx).Info("Cannot patch StatefulSets: a group's worker whose name a previous leader's pod held is made after the StatefulSet controller's backoff (reinstall with kubectl llm install to grant it)",
						"error", err.Error())
				})
				continue
			}
			log.FromContext(ctx).V(1).Info("Could not touch a worker StatefulSet", "statefulSet", hold.leader, "error", err.Error())
		}
	}
}

// retryWorkerSet touches the worker StatefulSet of hold's leader, read from the API server, when
// that leader pod owns it: an annotation naming the pod that held the name, written at the
// resourceVersion read.
func (r *Reconciler) retryWorkerSet(ctx context.Context, namespace string, hold heldWorker) error {
	sts := &appsv1.StatefulSet{}
	if err := r.live().Get(ctx, types.NamespacedName{Namespace: namespace, Name: hold.leader}, sts); err != nil {
		return client.IgnoreNotFound(err) // not made yet: it will be made with the name free
	}
	ref := metav1.GetControllerOf(sts)
	if ref == nil || ref.Kind != "Pod" || ref.UID != hold.leaderUID || sts.DeletionTimestamp != nil {
		return nil
	}
	patch := client.MergeFromWithOptions(sts.DeepCopy(), client.MergeFromWithOptimisticLock{})
	metav1.SetMetaDataAnnotation(&sts.ObjectMeta, v1.AnnotationWorkerRetry, string(hold.uid))
	if err := r.Client.Patch(ctx, sts, patch); err != nil {
		// A conflict is someone else's update of the StatefulSet since the read: that update
		// wakes the StatefulSet controller as this one would have.
		if apierrors.IsConflict(err) {
			return nil
		}
		return client.IgnoreNotFound(err)
	}
	log.FromContext(ctx).V(1).Info("Touched a worker StatefulSet whose pod's name a previous leader's pod held", "statefulSet", sts.Name, "heldBy", hold.uid)
	return nil
}
