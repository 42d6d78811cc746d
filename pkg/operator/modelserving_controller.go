// Package operator reconciles ModelServings into LeaderWorkerSet groups: one LeaderWorkerSet,
// one Service for the leaders and ControllerRevisions of the pod-affecting spec per serving (with
// spec.roles, a LeaderWorkerSet and a Service per role, moved together by pkg/roleplan).
// Reconcile is observe → compute (pure: compute.go, compute_roles.go, desired.go, podtemplate.go,
// planner.go) → act (server-side apply, skipped when the intent is unchanged) → report (one
// status write, through pkg/status). It also builds the manager that hosts the reconciler and,
// optionally, LWS. It imports api, naming (names and labels), revision (revision encoding),
// roleplan (the roles' planner), scheme and status; never cli or tui. Nothing but the `operator` command and tests imports it.
package operator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	lwsac "sigs.k8s.io/lws/client-go/applyconfiguration/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/failpoint"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// ControllerName is the name of the ModelServing controller (LWS's own are "leaderworkerset" and "pod").
const ControllerName = "modelserving"

// DefaultHistoryLimit is how many ControllerRevisions a serving keeps.
const DefaultHistoryLimit = 10

// conflictRecheck is how often a serving whose child's name is taken looks again.
const conflictRecheck = 5 * time.Second

// finalizeRecheck is how often a serving being deleted looks again whether its children are gone,
// besides the events of their deletions.
const finalizeRecheck = 5 * time.Second

// conflictRetry is how soon a pass whose write met a child changed since it was read looks again.
const conflictRetry = 100 * time.Millisecond

// lwsMissingRecheck is how often a serving looks again whether LeaderWorkerSet is served, once
// its CRD is gone (the operator may not watch CRDs; a new serving is reconciled at once anyway).
const lwsMissingRecheck = 10 * time.Second

// Reconciler reconciles one ModelServing.
type Reconciler struct {
	Client   client.Client
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	// HistoryLimit bounds the ControllerRevisions kept per serving.
	HistoryLimit int
	Metrics      *Metrics
	// Children reads the serving's LeaderWorkerSet, Service and ControllerRevisions: a cache that
	// holds only ours (see newChildrenCache). Client when nil.
	Children client.Reader
	// Live reads from the API server: whether an object the children cache does not hold
	// exists (one that is not ours, or ours before the cache saw it), and what finalize deletes.
	// Client when nil.
	Live client.Reader
	// ChildrenCache is the cache whose Services and ControllerRevisions are watched, and
	// LWSSource the one whose LeaderWorkerSets are; the manager's cache when nil.
	ChildrenCache, LWSSource cache.Cache
	// Workers is how many servings are reconciled at once; DefaultServingWorkers when 0.
	Workers int
	// Failpoints stop the process at a named point of a pass (the fault suite); inert when zero.
	Failpoints failpoint.Set
	// AdmitLWS runs the LWS webhooks' defaulting and validation on each LeaderWorkerSet before
	// it is written (admitLWS): the embedded LWS webhooks skip the operator's own writes.
	AdmitLWS bool

	// applied remembers, per child, what our last apply produced (the LWS's generation, the
	// Service's resourceVersion, both from the apply response), so a child that someone else
	// changed is applied again although our intent did not change. It starts empty: after a
	// restart every child is applied once (an unchanged apply writes nothing), so a hand edit made
	// while the operator was down is undone too.
	applied sync.Map // childKey -> int64 (LWS generation) or string (Service resourceVersion)
	// built remembers what each serving's LeaderWorkerSet was last built from and to (see builtLWS).
	built builtLWS
	// rolloutStart remembers when a serving's current rollout began, for the duration metric.
	rolloutStart sync.Map // types.NamespacedName -> time.Time
	// done remembers what each serving's stored status last called done (see noteDone).
	done sync.Map // types.NamespacedName -> doneMark
	// StatusDetailInterval is how long a change of detail alone (StatusDetailOnly) waits before
	// it is written, and how often at most it is; DefaultStatusDetailInterval when 0.
	StatusDetailInterval time.Duration
	// detailHeld remembers since when a serving's status detail has been held back (see
	// statusDetailWait); dropped when the status is written or needs no write.
	detailHeld sync.Map // types.NamespacedName -> time.Time
	// Namespaces reads namespaces' metadata (the manager's cache): the servings of a namespace
	// being deleted are left alone until their own deletion. Not looked at when nil.
	Namespaces client.Reader
	// statusWritten remembers the status this process last wrote of each serving (see ownStatus).
	statusWritten sync.Map // types.NamespacedName -> ownStatus
	// echoes are the servings as our own last writes left them (see ownEchoes); revisionEchoes,
	// the ControllerRevisions as our creates made them.
	echoes, revisionEchoes ownEchoes
	// released remembers the servings whose finalizer this process removed (their UID), until
	// a pass finds them gone: a pass queued before the cache saw the removal does nothing.
	released sync.Map // types.NamespacedName -> types.UID
	// unseen remembers the children this process made that the caches have not been found to
	// hold yet (see finalize).
	unseen unseenChildren
	// noLeaderSetRead logs once that StatefulSets cannot be read (see leaderSetUnsettled).
	noLeaderSetRead sync.Once
	// holds are the worker names held by previous leaders' pods, by serving (see workerretry.go);
	// noWorkerRetry logs once that worker StatefulSets cannot be patched.
	holds         workerHolds
	noWorkerRetry sync.Once
	// indexed: the caches index pods and ControllerRevisions by their serving (servingIndex).
	indexed bool
	// services creates new Services beside the passes (see serviceMaker); nil in a reconciler
	// not run by a manager, whose passes create them themselves.
	services *serviceMaker
	// ServiceCreators is how many Services are created at once; DefaultServiceCreators when 0.
	ServiceCreators int
	// PodEventBatch is how long the pass a pod's creation or update queues waits, so that the
	// events of a group's pods within it make one pass (see mappedToServing);
	// DefaultPodEventBatch when 0, none when negative.
	PodEventBatch time.Duration
}

// DefaultPodEventBatch is how long a pod's creation or update waits before the pass it queues: a
// group's restart or rollout is tens of pod events within a second. A pod's deletion, or its
// moving into or out of Ready, queues at once (see mappedToServing).
const DefaultPodEventBatch = 100 * time.Millisecond

// observed is everything one pass reads.
type observed struct {
	serving   *v1.ModelServing
	lws       *lwsv1.LeaderWorkerSet
	service   *corev1.Service
	revisions []appsv1.ControllerRevision
	pods      []corev1.Pod
	// events are the FailedCreate events of the serving's LeaderWorkerSet and StatefulSets.
	events []corev1.Event
	// conflicts are objects with our children's names that are not ours: left alone, reported.
	conflicts []status.Problem
	// lwsConflict and serviceConflict say which child must not be applied this pass.
	lwsConflict, serviceConflict bool
	// roles are the children and pods of each role of a serving with spec.roles, in
	// v1.RoleNames order; lws and service above are then nil.
	roles []observedRole
}

// allPods are the serving's pods, its roles' included.
func (o *observed) allPods() []corev1.Pod {
	if len(o.roles) == 0 {
		return o.pods
	}
	all := slices.Clone(o.pods)
	for _, ro := range o.roles {
		all = append(all, ro.pods...)
	}
	return all
}

// +kubebuilder:rbac:groups=serving.kubectl-llm.dev,resources=modelservings,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=serving.kubectl-llm.dev,resources=modelservings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=serving.kubectl-llm.dev,resources=modelservings/finalizers,verbs=update
// +kubebuilder:rbac:groups=leaderworkerset.x-k8s.io,resources=leaderworkersets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// Namespaces are read (their metadata) to leave the servings of a namespace being deleted alone.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// A leader StatefulSet is read (never watched) when its rollout is about to be called done; a
// group's worker StatefulSet is read and touched (an annotation) when a previous leader's pod that
// held one of its workers' names is gone (see workerretry.go).
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// Events are read too: FailedCreate events of the serving's LWS and StatefulSets reach its status.
// +kubebuilder:rbac:groups="",resources=events,verbs=get;list;watch;create;patch
// Leader election: the Lease lives in the operator's namespace only (a Role, not a ClusterRole).
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=kubectl-llm-system

// Reconcile brings one serving's children to its spec and reports its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := r.Clock.Now()
	defer func() { r.Metrics.observeReconcile(r.Clock.Since(start)) }()

	ms := &v1.ModelServing{}
	if err := r.Client.Get(ctx, req.NamespacedName, ms); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !ms.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, ms)
	}
	if namespaceDeleted(ctx, r.Namespaces, req.Namespace) {
		// The namespace is being deleted, the serving with it: its pods go before it does, and
		// nothing it would write (a status saying so, children the API server refuses to make in
		// a namespace that goes) helps anyone. Its finalizer goes now, before the namespace
		// controller deletes it: that controller deletes every object of the namespace, the
		// children with the serving, so the finalizer keeps nothing from being left behind, and a
		// serving it still finds with a finalizer right after deleting it makes it wait 8 s
		// before it looks again (its default estimate for finalizers, halved), every time.
		if controllerutil.ContainsFinalizer(ms, v1.FinalizerChildren) {
			log.FromContext(ctx).V(1).Info("The serving's namespace is being deleted: its finalizer goes, its children with the namespace")
			return r.removeFinalizer(ctx, ms)
		}
		return ctrl.Result{}, nil
	}
	r.withOwnStatus(ms)
	// A serving without our finalizer (its first pass) gets it after its LeaderWorkerSet's
	// create, with the pass's first write that needs it or after act (see liveness and
	// firstPass). It is made on a copy, which the pass takes once it went through.
	live := &liveness{serving: ms}
	if !controllerutil.ContainsFinalizer(ms, v1.FinalizerChildren) {
		live.first = ms.ResourceVersion != "" // createOnly needs it
		live.writeFinalizer = func() *finalizerWrite { return r.writeFinalizer(ctx, req.NamespacedName, ms) }
	}
	ctx = context.WithValue(ctx, livenessKey{}, live)
	obs, stale, err := r.observe(ctx, ms)
	var in intent
	var actErr error
	if err == nil && !stale {
		in = compute(obs, computeInput{now: r.Clock.Now(), historyLimit: r.HistoryLimit, built: &r.built})
		if in.specErr == nil {
			actErr = r.act(ctx, obs, &in)
		}
		r.retryHeldWorkers(ctx, ms, obs.allPods())
	}
	finalizer := live.finalizer
	if err == nil && !stale {
		finalizer = live.finalizing()
	}
	if finalizer != nil && finalizer.err == nil {
		ms, live.serving, live.confirmed = finalizer.serving, finalizer.serving, true
	}
	if finalizer != nil {
		if finalizer.err != nil {
			return ctrl.Result{}, finalizer.err
		}
		if obs != nil {
			obs.serving = ms
		}
	}
	if errors.Is(err, errServingNotLive) {
		return r.notLive(ctx)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if stale {
		// Children of an earlier serving with the same name are being removed; look again soon.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if errors.Is(actErr, errServingNotLive) {
		return r.notLive(ctx)
	}
	var lookAgain *errLookAgain
	if apierrors.IsConflict(actErr) || errors.As(actErr, &lookAgain) {
		// A child changed between this pass's read and its write (an apply carries the
		// resourceVersion it was decided on), or a create-only write found the name taken: not a
		// failure to report; look again with what the cache (and the API server) have by then.
		log.FromContext(ctx).V(1).Info("A child changed since it was read; looking again", "error", actErr.Error())
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	if apierrors.HasStatusCause(actErr, corev1.NamespaceTerminatingCause) {
		// The namespace is being deleted, the serving with it: nothing to repair or report; look
		// again until the serving's own deletion reaches it.
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	}
	// The status is written on every pass, whatever act did: an error becomes a condition.
	sum, detailWait, reportErr := r.report(ctx, obs, in, actErr)
	res, err := r.outcome(ctx, obs, in, sum, actErr, reportErr)
	return withDetailWait(res, err, detailWait)
}

// writeFinalizer writes our finalizer to a copy of ms (see liveness.finalizing).
func (r *Reconciler) writeFinalizer(ctx context.Context, key types.NamespacedName, ms *v1.ModelServing) *finalizerWrite {
	f := &finalizerWrite{serving: ms.DeepCopy()}
	f.err = r.addFinalizer(ctx, f.serving)
	if f.err == nil {
		r.echoes.wrote(key, f.serving.ResourceVersion) // the pass goes on with it
		r.Failpoints.Hit("after-finalizer", key.String())
	}
	return f
}

// addFinalizer adds our finalizer to the serving, at the resourceVersion the pass read.
func (r *Reconciler) addFinalizer(ctx context.Context, ms *v1.ModelServing) error {
	patch := client.MergeFromWithOptions(ms.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(ms, v1.FinalizerChildren)
	if err := r.patchServing(ctx, ms, patch, ""); err != nil {
		return fmt.Errorf("add finalizer: %w", err)
	}
	return nil
}

// patchServing sends the patch that patch makes of ms to the serving (or to its subresource) and
// asks for its metadata alone in return (the metadata client's PartialObjectMetadata), which it
// puts in ms. What the pass goes on with after a write of ours is the serving's metadata (its
// resourceVersion, its finalizers): the rest of it is what the pass sent, or, behind an
// optimistic lock, what it read. Decoding the whole serving the API server sends back otherwise
// was most of the CPU of our status writes in a burst, and the API server encodes less.
func (r *Reconciler) patchServing(ctx context.Context, ms *v1.ModelServing, patch client.Patch, subresource string) error {
	data, err := patch.Data(ms)
	if err != nil {
		return err
	}
	meta := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ms.Namespace, Name: ms.Name}}
	meta.SetGroupVersionKind(v1.GroupVersion.WithKind("ModelServing"))
	raw := client.RawPatch(patch.Type(), data)
	if subresource == "" {
		err = r.Client.Patch(ctx, meta, raw)
	} else {
		err = r.Client.SubResource(subresource).Patch(ctx, meta, raw)
	}
	if err != nil {
		return err
	}
	ms.ObjectMeta = meta.ObjectMeta
	return nil
}

// outcome is how a pass ends, from what act and report did.
func (r *Reconciler) outcome(ctx context.Context, obs *observed, in intent, sum status.Summary, actErr, reportErr error) (ctrl.Result, error) {
	var specErr *specError
	switch {
	case in.specErr != nil || errors.As(actErr, &specErr):
		// A spec the operator cannot serve: recorded; not retried until the spec changes.
		if reportErr != nil {
			return ctrl.Result{}, reportErr
		}
		return ctrl.Result{}, reconcile.TerminalError(cmp.Or(in.specErr, actErr))
	case lwsMissing(actErr):
		// Not something a retry soon mends: said in the status (and logged once by the status'
		// change), looked at again every lwsMissingRecheck rather than with backoff, which
		// starts at milliseconds and logs every retry.
		if reportErr != nil {
			return ctrl.Result{}, reportErr
		}
		return ctrl.Result{RequeueAfter: lwsMissingRecheck}, nil
	case actErr != nil:
		// Retried with backoff; the status says why (observedGeneration stays where it was).
		if reportErr != nil {
			log.FromContext(ctx).Error(reportErr, "Failed to report an apply error in the status")
		}
		return ctrl.Result{}, actErr
	case reportErr != nil:
		return ctrl.Result{}, reportErr
	case len(obs.conflicts) > 0:
		// Objects that are not ours are not cached, so their deletion wakes nobody: ask the API
		// server again soon whether the name is free (one GET per conflicting serving).
		return ctrl.Result{RequeueAfter: conflictRecheck}, nil
	}
	return ctrl.Result{RequeueAfter: requeueAfter(sum, r.Clock.Now())}, nil
}

// withDetailWait brings the pass's next look forward to when the status detail it did not write
// yet (report's wait, 0 when none) may be written. A pass that fails is retried with backoff
// anyway, and report writes at once in a pass that ends in a terminal error (not requeued).
func withDetailWait(res ctrl.Result, err error, wait time.Duration) (ctrl.Result, error) {
	if err == nil && wait > 0 && (res.RequeueAfter == 0 || wait < res.RequeueAfter) {
		res.RequeueAfter = wait
	}
	return res, err
}

// specError is a terminal error: the spec cannot be turned into children.
type specError struct{ err error }

func (e *specError) Error() string { return e.err.Error() }
func (e *specError) Unwrap() error { return e.err }

// observe reads the serving's children and pods from the cache. stale is true while children of
// an earlier serving with the same name (another UID) are still being deleted. Objects with our
// children's names that no ModelServing of our group controls are recorded as conflicts.
func (r *Reconciler) observe(ctx context.Context, ms *v1.ModelServing) (*observed, bool, error) {
	obs := &observed{serving: ms}
	key := client.ObjectKeyFromObject(ms)
	stale := false

	if len(ms.Spec.Roles) == 0 {
		lws, svc := &lwsv1.LeaderWorkerSet{}, &corev1.Service{}
		ours, conflict, err := r.readChild(ctx, obs, "LeaderWorkerSet", key, lws, &stale)
		if err != nil {
			return nil, false, err
		}
		if ours {
			obs.lws = lws
		}
		obs.lwsConflict = conflict
		ours, conflict, err = r.readChild(ctx, obs, "Service", types.NamespacedName{Namespace: ms.Namespace, Name: naming.ServiceName(ms.Name)}, svc, &stale)
		if err != nil {
			return nil, false, err
		}
		if ours {
			obs.service = svc
		}
		obs.serviceConflict = conflict
	}
	// A serving with roles has a LeaderWorkerSet and a Service per role instead, with the same
	// ownership rules each.
	for _, name := range v1.RoleNames() {
		if ms.Spec.Role(name) == nil {
			continue
		}
		ro := observedRole{name: name}
		lws, svc := &lwsv1.LeaderWorkerSet{}, &corev1.Service{}
		ours, conflict, err := r.readChild(ctx, obs, "LeaderWorkerSet", types.NamespacedName{Namespace: ms.Namespace, Name: naming.RoleWorkloadName(ms.Name, name)}, lws, &stale)
		if err != nil {
			return nil, false, err
		}
		if ours {
			ro.lws = lws
		}
		ro.lwsConflict = conflict
		ours, conflict, err = r.readChild(ctx, obs, "Service", types.NamespacedName{Namespace: ms.Namespace, Name: naming.RoleServiceName(ms.Name, name)}, svc, &stale)
		if err != nil {
			return nil, false, err
		}
		if ours {
			ro.service = svc
		}
		ro.serviceConflict = conflict
		obs.roles = append(obs.roles, ro)
	}

	revs := &appsv1.ControllerRevisionList{}
	if err := r.children().List(ctx, revs, r.revisionsOf(ms)...); err != nil {
		return nil, false, fmt.Errorf("list ControllerRevisions of %s: %w", key, err)
	}
	r.unseen.any(ctx, key, r.children()) // drops the children made here that the caches hold by now
	for i := range revs.Items {
		rev := &revs.Items[i]
		own, err := r.claim(ctx, ms, rev)
		if err != nil {
			return nil, false, err
		}
		if own == childOurs {
			obs.revisions = append(obs.revisions, *rev)
		}
	}

	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, r.podsOf(ms)...); err != nil {
		return nil, false, fmt.Errorf("list pods of %s: %w", key, err)
	}
	obs.pods = pods.Items
	for i := range obs.roles {
		ro := &obs.roles[i]
		for _, p := range pods.Items {
			if p.Labels[naming.LabelRole] == string(ro.name) {
				ro.pods = append(ro.pods, p)
			}
		}
	}

	events := &corev1.EventList{}
	if err := r.Client.List(ctx, events, client.InNamespace(ms.Namespace)); err != nil {
		return nil, false, fmt.Errorf("list events of %s: %w", key, err)
	}
	for _, e := range events.Items {
		io := e.InvolvedObject
		if e.Reason != status.EventFailedCreate {
			continue
		}
		if serving, role := naming.RoleOfWorkload(io.Kind, io.Name); serving == ms.Name {
			for i := range obs.roles {
				ro := &obs.roles[i]
				if ro.name == role && !(io.Kind == "LeaderWorkerSet" && (ro.lws == nil || (io.UID != "" && io.UID != ro.lws.UID))) {
					ro.events = append(ro.events, e)
				}
			}
			continue
		}
		if naming.ServingOfWorkload(io.Kind, io.Name) != ms.Name {
			continue
		}
		if io.Kind == "LeaderWorkerSet" && (obs.lws == nil || (io.UID != "" && io.UID != obs.lws.UID)) {
			continue // about a LeaderWorkerSet that is not this serving's own
		}
		obs.events = append(obs.events, e)
	}
	return obs, stale, nil
}

// readChild reads the child named key into obj and decides whose it is: ours (obj holds it), an
// earlier serving's (deleted, and *stale set while it goes), or an object that is not ours, whose
// name conflict is recorded in obs.conflicts.
func (r *Reconciler) readChild(ctx context.Context, obs *observed, kind string, key types.NamespacedName, obj client.Object, stale *bool) (ours, conflict bool, err error) {
	switch err := r.getChild(ctx, key, obj); {
	case apierrors.IsNotFound(err):
		return false, false, nil
	case err != nil:
		return false, false, fmt.Errorf("get %s %s: %w", kind, key, err)
	}
	switch own, err := r.claim(ctx, obs.serving, obj); {
	case err != nil:
		return false, false, err
	case own == childOurs:
		return true, false, nil
	case own == childStale:
		*stale = true
		return false, false, nil
	default:
		obs.conflicts = append(obs.conflicts, nameConflict(kind, obj))
		return false, true, nil
	}
}

// getChild reads a child from the children cache and, when the cache does not hold it, from the
// API server: the cache holds only objects with our labels, so an object with the child's name
// that is not ours (a NameConflict), or ours before the cache saw it, is found there. A serving's
// first pass does not ask: its creates are create-only, and tell (see liveness.first).
func (r *Reconciler) getChild(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	err := r.children().Get(ctx, key, obj)
	if !apierrors.IsNotFound(err) || r.Live == nil || firstPass(ctx) {
		return err
	}
	if _, svc := obj.(*corev1.Service); svc && r.services != nil && r.services.busy(key) {
		return err // ours, on its way (see serviceMaker)
	}
	return r.Live.Get(ctx, key, obj)
}

func (r *Reconciler) children() client.Reader {
	if r.Children != nil {
		return r.Children
	}
	return r.Client
}

func (r *Reconciler) live() client.Reader {
	if r.Live != nil {
		return r.Live
	}
	return r.Client
}

// childOwnership is how a child with one of our names relates to a serving.
type childOwnership int

const (
	childOurs    childOwnership = iota // controlled by this serving (our group, its live UID)
	childStale                         // controlled by an earlier ModelServing of our group with the same name
	childForeign                       // anything else: no controller, or another kind or group
)

// adoptable: a child with no controller at all that carries the serving's name and managed-by
// labels, as `kubectl delete --cascade=orphan` of an earlier serving with this name leaves its
// children (the garbage collector removes the owner reference, nothing else). The serving adopts
// it, as a ReplicaSet adopts the orphaned pods its selector matches, so its groups keep running.
// An object without those labels (made by hand or by another tool) stays a NameConflict.
func adoptable(ms *v1.ModelServing, child metav1.Object) bool {
	l := child.GetLabels()
	return metav1.GetControllerOf(child) == nil && child.GetDeletionTimestamp().IsZero() &&
		l[v1.LabelName] == ms.Name && l[v1.LabelManagedBy] == v1.ManagedByValue
}

// ownership decides whose a child is, from its controller reference only.
func ownership(ms *v1.ModelServing, child metav1.Object) childOwnership {
	ref := metav1.GetControllerOf(child)
	if ref == nil || ref.Kind != "ModelServing" {
		return childForeign
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != v1.GroupVersion.Group {
		return childForeign
	}
	if ref.UID == ms.UID {
		return childOurs
	}
	return childStale
}

// claim decides whose a child is and deletes a stale one (its groups belong to a serving the user
// deleted), with the child's UID as a precondition so nothing else is deleted in its place.
func (r *Reconciler) claim(ctx context.Context, ms *v1.ModelServing, child client.Object) (childOwnership, error) {
	own := ownership(ms, child)
	if own == childForeign && adoptable(ms, child) {
		if err := r.confirmLive(ctx, ms); err != nil {
			return own, err
		}
		if err := r.adopt(ctx, ms, child); err != nil {
			return own, err
		}
		return childOurs, nil
	}
	if own != childStale || !child.GetDeletionTimestamp().IsZero() {
		return own, nil
	}
	uid := child.GetUID()
	err := r.Client.Delete(ctx, child, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return own, fmt.Errorf("delete %T %s of an earlier serving: %w", child, child.GetName(), err)
	}
	log.FromContext(ctx).Info("Deleted a child of an earlier serving with the same name", "child", child.GetName(), "uid", uid)
	r.Failpoints.Hit("after-stale-delete", client.ObjectKeyFromObject(ms).String())
	return own, nil
}

// adopt makes the serving the controller of an orphaned child of its own (see adoptable), with
// its resourceVersion as a precondition so a child that changed meanwhile is looked at again.
func (r *Reconciler) adopt(ctx context.Context, ms *v1.ModelServing, child client.Object) error {
	patch := client.MergeFromWithOptions(child.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	child.SetOwnerReferences(append(child.GetOwnerReferences(), *metav1.NewControllerRef(ms, v1.GroupVersion.WithKind("ModelServing"))))
	if err := r.Client.Patch(ctx, child, patch); err != nil {
		return fmt.Errorf("adopt %T %s: %w", child, child.GetName(), err)
	}
	// What the last apply made is not known for an adopted child: apply it once.
	key := client.ObjectKeyFromObject(child)
	switch child.(type) {
	case *lwsv1.LeaderWorkerSet:
		r.applied.Delete(childKey{"LeaderWorkerSet", key})
	case *corev1.Service:
		r.applied.Delete(childKey{"Service", key})
	}
	log.FromContext(ctx).Info("Adopted an orphaned child", "child", child.GetName(), "kind", fmt.Sprintf("%T", child))
	if r.Recorder != nil {
		r.Recorder.Eventf(ms, nil, corev1.EventTypeNormal, "Adopted", "Adopt",
			"adopted %s, left without an owner (kubectl delete --cascade=orphan of an earlier serving named %s)", child.GetName(), ms.Name)
	}
	r.Failpoints.Hit("after-adopt", client.ObjectKeyFromObject(ms).String())
	return nil
}

// nameConflict says which object holds one of our names and who controls it.
func nameConflict(kind string, o client.Object) status.Problem {
	who := "no controller"
	if ref := metav1.GetControllerOf(o); ref != nil {
		who = fmt.Sprintf("controlled by %s %s/%s", ref.APIVersion, ref.Kind, ref.Name)
	}
	return status.Problem{Reason: v1.ReasonNameConflict, Message: fmt.Sprintf(
		"%s %s already exists and is not this serving's (%s): the operator leaves it alone; rename or delete it, or give the serving another name",
		kind, o.GetName(), who)}
}

// act carries out what compute decided: applies the LWS, records the revision (or renumbers one),
// applies the Service and prunes old revisions. It decides nothing.
//
// The LeaderWorkerSet goes first, as it is what the groups wait on: a new serving's first groups,
// a rollout's new template, an undo's old one. The revision it runs is recorded right after. Its
// template carries the revision's name, computed from the spec, not read from the record, and a
// pass that finds an LWS on a revision with no record records it (compute), so a kill between the
// two loses nothing; only for the milliseconds between them can the LWS run a revision the history
// does not list yet. (From session 20 to 34 a rollout's record was sent beside its apply, at the
// same moment; since the record asks nothing of the API server first, the apply first costs a
// rollout nothing.)
func (r *Reconciler) act(ctx context.Context, obs *observed, in *intent) error {
	// Every write below was decided on the serving as the cache held it: none of them can give a
	// released child back to a serving deleted since (see liveness).
	for _, step := range []func(context.Context, *observed, *intent) error{r.applyWorkloads, r.record, r.applyServices, r.prune} {
		if err := step(ctx, obs, in); err != nil {
			return err
		}
	}
	return nil
}

// prune deletes the revisions beyond the history limit, each at the resourceVersion the pass
// read: a record the garbage collector released since (its serving deleted with
// --cascade=orphan, the record kept for the user) has another, and the API server refuses the
// delete. So the prune asks nothing of the serving first (see liveness).
func (r *Reconciler) prune(ctx context.Context, obs *observed, in *intent) error {
	for _, rev := range in.prune {
		uid, rv := rev.UID, rev.ResourceVersion
		err := r.Client.Delete(ctx, &rev, client.Preconditions{UID: &uid, ResourceVersion: &rv})
		switch {
		case apierrors.IsConflict(err):
			// Released, or changed by someone since the cache read it: the event of that change
			// brings the next pass, which decides on the record as it is.
			log.FromContext(ctx).V(1).Info("A revision to prune changed since the cache read it; left for the next pass", "revision", rev.Name)
			continue
		case err != nil && !apierrors.IsNotFound(err):
			return fmt.Errorf("prune ControllerRevision %s: %w", rev.Name, err)
		}
		r.unseen.drop(client.ObjectKeyFromObject(obs.serving), childKey{"ControllerRevision", client.ObjectKeyFromObject(&rev)})
		r.Failpoints.Hit("after-prune", client.ObjectKeyFromObject(obs.serving).String())
	}
	return nil
}

// record creates the update revision's ControllerRevision or renumbers a recorded one (an undo),
// and sends the pass's notes as events.
func (r *Reconciler) record(ctx context.Context, obs *observed, in *intent) error {
	key := client.ObjectKeyFromObject(obs.serving).String()
	switch {
	case in.createRevision != nil:
		if err := r.beforeCreate(ctx); err != nil {
			return err
		}
		r.unseen.made(client.ObjectKeyFromObject(obs.serving), childKey{"ControllerRevision", client.ObjectKeyFromObject(in.createRevision)})
		switch err := r.Client.Create(ctx, in.createRevision); {
		case apierrors.IsAlreadyExists(err):
			// The cache has not seen our own earlier create yet.
		case err != nil:
			return fmt.Errorf("create ControllerRevision %s: %w", in.createRevision.Name, err)
		default:
			r.revisionEchoes.wrote(client.ObjectKeyFromObject(in.createRevision), in.createRevision.ResourceVersion)
		}
		r.Failpoints.Hit("after-revision", key)
	case in.renumber != nil:
		if err := r.beforeWrite(ctx); err != nil {
			return err
		}
		rev := findRevision(obs.revisions, in.renumber.name).DeepCopy()
		patch := client.MergeFrom(rev.DeepCopy())
		rev.Revision = in.renumber.to
		if err := r.Client.Patch(ctx, rev, patch); err != nil {
			return fmt.Errorf("renumber ControllerRevision %s: %w", rev.Name, err)
		}
		r.Failpoints.Hit("after-renumber", key)
	}
	for _, note := range in.notes {
		log.FromContext(ctx).Info(note)
		if r.Recorder != nil {
			r.Recorder.Eventf(obs.serving, nil, corev1.EventTypeWarning, "RevisionMissing", "Reconcile", "%s", note)
		}
	}
	return nil
}

// applyServices applies the serving's Service, or its roles' ones.
func (r *Reconciler) applyServices(ctx context.Context, obs *observed, in *intent) error {
	if in.service != nil {
		if err := r.applyService(ctx, obs.serving, obs.service, in.service); err != nil {
			return err
		}
	}
	for _, ri := range in.roles {
		if ri.service != nil {
			if err := r.applyService(ctx, obs.serving, obs.role(ri.name).service, ri.service); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyWorkloads applies the serving's LeaderWorkerSet, or its roles' ones.
func (r *Reconciler) applyWorkloads(ctx context.Context, obs *observed, in *intent) error {
	ms := obs.serving
	if in.lws != nil || in.lwsRebuild != nil {
		key := types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}
		if err := r.applyLWS(ctx, key, obs.lws, in.lws, in.lwsHash, in.lwsRebuild); err != nil {
			return err
		}
	}
	for _, ri := range in.roles {
		if ri.lws != nil || ri.rebuild != nil {
			key := types.NamespacedName{Namespace: ms.Namespace, Name: naming.RoleWorkloadName(ms.Name, ri.name)}
			if err := r.applyLWS(ctx, key, obs.role(ri.name).lws, ri.lws, ri.hash, ri.rebuild); err != nil {
				return err
			}
		}
	}
	return nil
}

// childKey names a child in the applied bookkeeping: its kind and its name.
type childKey struct {
	kind string
	name types.NamespacedName
}

// forget drops what this process remembers of a serving that is gone: its metrics, what it
// applied of its children, when it last wrote its status and when its rollout began (a serving
// deleted mid rollout would otherwise be kept for good).
func (r *Reconciler) forget(key types.NamespacedName) {
	r.Metrics.forget(key)
	r.forgetChildren(key)
	r.statusWritten.Delete(key)
	r.detailHeld.Delete(key)
	r.rolloutStart.Delete(key)
	r.done.Delete(key)
	r.built.forget(key)
	r.echoes.forget(key)
	r.released.Delete(key)
	r.unseen.forget(key)
	r.holds.forget(key)
	if r.services != nil {
		r.services.forget(key)
	}
}

// forgetChildren drops the applied bookkeeping of a serving that is gone: its own children and
// its roles'.
func (r *Reconciler) forgetChildren(key types.NamespacedName) {
	names := []string{key.Name}
	for _, role := range v1.RoleNames() {
		names = append(names, naming.RoleWorkloadName(key.Name, role))
	}
	for _, n := range names {
		r.applied.Delete(childKey{"LeaderWorkerSet", types.NamespacedName{Namespace: key.Namespace, Name: n}})
		r.applied.Delete(childKey{"Service", types.NamespacedName{Namespace: key.Namespace, Name: naming.ServiceName(n)}})
	}
}

// applyLWS applies a desired LeaderWorkerSet, named key, over the live one (nil when there is
// none). hash is desired's IntentHash, "" when not known yet. desired is nil when the live one
// carries hash already (see builtLWS): rebuild builds it only if it must be written after all.
func (r *Reconciler) applyLWS(ctx context.Context, key types.NamespacedName, live *lwsv1.LeaderWorkerSet, desired *lwsac.LeaderWorkerSetApplyConfiguration, hash string,
	rebuild func() (*lwsac.LeaderWorkerSetApplyConfiguration, error)) error {
	if hash == "" {
		hash = IntentHash(desired)
	}
	ck := childKey{"LeaderWorkerSet", key}
	if live != nil && live.Annotations[AnnotationAppliedHash] == hash {
		// Skip only what we know we made: the generation our last apply returned. Status writes
		// (LWS's own) do not move the generation; spec edits by anyone else do.
		if gen, known := r.applied.Load(ck); known && gen.(int64) == live.Generation {
			return nil
		}
	}
	if desired == nil {
		var err error
		if desired, err = rebuild(); err != nil {
			return err
		}
	}
	desired.WithAnnotations(map[string]string{AnnotationAppliedHash: hash})
	if r.AdmitLWS {
		if err := admitLWS(ctx, desired); err != nil {
			return err
		}
	}
	creating := live == nil
	if !creating {
		// Over the LWS this pass read only: a release by the garbage collector since (the
		// serving deleted with --cascade=orphan) makes the API server refuse the apply. That is
		// all the apply needs: it asks no liveness of the serving (see liveness).
		desired.WithResourceVersion(live.ResourceVersion)
	} else {
		// A serving's first pass creates before the finalizer's write (see liveness.first); any
		// other asks first.
		if !firstPass(ctx) {
			if err := r.beforeWrite(ctx); err != nil {
				return err
			}
		}
		if l := passLiveness(ctx); l != nil {
			desired.WithResourceVersion(createOnly(l.serving))
		}
		r.unseen.made(servingKeyOf(key), ck) // before the create: a deletion meanwhile asks the API server
	}
	if err := r.apply(ctx, desired, "LeaderWorkerSet", key); err != nil {
		if creating && firstPass(ctx) {
			return &errLookAgain{err}
		}
		return err
	}
	r.applied.Store(ck, ptr.Deref(desired.Generation, 0)) // the apply response, not a cache read
	if live == nil || ptr.Deref(desired.Generation, 0) != live.Generation {
		r.Failpoints.Hit("after-lws", key.Namespace+"/"+servingOfChild(key.Name)) // only after a write that changed it
	}
	return nil
}

// applyService applies a desired Service over the live one (nil when there is none). A Service to
// create is handed to the serviceMaker when there is one (see there): the pass does not wait for
// it.
func (r *Reconciler) applyService(ctx context.Context, ms *v1.ModelServing, live *corev1.Service, desired *corev1ac.ServiceApplyConfiguration) error {
	hash := IntentHash(desired)
	key := types.NamespacedName{Namespace: ptr.Deref(desired.Namespace, ""), Name: ptr.Deref(desired.Name, "")}
	ck := childKey{"Service", key}
	if live != nil && live.Annotations[AnnotationAppliedHash] == hash {
		// A Service has no generation: skip only at the resourceVersion our last apply returned.
		if rv, known := r.applied.Load(ck); known && rv.(string) == live.ResourceVersion {
			return nil
		}
		if r.services != nil && r.services.creatingNow(key) {
			// The serviceMaker's create of it is still returning (its watch event can come
			// first): it records what it made.
			return nil
		}
	}
	desired.WithAnnotations(map[string]string{AnnotationAppliedHash: hash})
	if live == nil && r.services != nil {
		// The error of the last create of this Service, if it failed (as the apply's own).
		return r.services.make(ms, desired)
	}
	if err := r.beforeWrite(ctx); err != nil {
		return err
	}
	if live != nil {
		desired.WithResourceVersion(live.ResourceVersion) // as for the LWS
	} else {
		desired.WithResourceVersion(createOnly(ms)) // as for the LWS
		r.unseen.made(servingKeyOf(types.NamespacedName{Namespace: key.Namespace, Name: naming.ServingOfService(key.Name)}), ck)
	}
	if err := r.apply(ctx, desired, "Service", key); err != nil {
		if live == nil && firstPass(ctx) {
			return &errLookAgain{err}
		}
		return err
	}
	r.applied.Store(ck, ptr.Deref(desired.ResourceVersion, ""))
	if live == nil || ptr.Deref(desired.ResourceVersion, "") != live.ResourceVersion {
		r.Failpoints.Hit("after-service", key.Namespace+"/"+servingOfChild(naming.ServingOfService(key.Name)))
	}
	return nil
}

// apply server-side applies an intent with our field manager, forcing ownership; the apply
// configuration holds the server's response afterwards. Invalid objects (refused by the API
// server or an admission webhook) are spec errors.
func (r *Reconciler) apply(ctx context.Context, ac runtime.ApplyConfiguration, kind string, key types.NamespacedName) error {
	err := r.Client.Apply(ctx, ac, client.FieldOwner(v1.FieldManager), client.ForceOwnership)
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return &specError{fmt.Errorf("the %s the spec makes is refused: %w", kind, err)}
	}
	if err != nil {
		return fmt.Errorf("apply %s %s: %w", kind, key, err)
	}
	log.FromContext(ctx).V(1).Info("Applied", "kind", kind, "name", key.Name)
	return nil
}

// report writes the status once, from the shared summary, on every pass. observedGeneration
// moves only when the pass succeeded; a refused or failed write becomes the Degraded condition.
// A change of detail alone waits for StatusDetailInterval (see statusDetailWait): report then
// returns how long until it may be written.
func (r *Reconciler) report(ctx context.Context, obs *observed, in intent, actErr error) (status.Summary, time.Duration, error) {
	ms := obs.serving
	now := r.Clock.Now()
	problems := obs.conflicts
	specErr := in.specErr
	var se *specError
	switch {
	case errors.As(actErr, &se):
		specErr = se
	case actErr != nil:
		problems = append([]status.Problem{actProblem(actErr)}, problems...)
	}
	seen := status.Observed{Serving: ms, LWS: obs.lws, Pods: obs.pods, Events: obs.events}
	for _, ro := range obs.roles {
		seen.Roles = append(seen.Roles, status.RoleInput{Name: ro.name, LWS: ro.lws, Pods: ro.pods, Events: ro.events})
	}
	input := status.InputOf(seen, now).WithRevisions(in.updateRev, in.plan.TemplateRevision)
	input.SpecError, input.Problems, input.Plan = specErr, problems, status.RolePlanOf(in.rolePlan)
	sum, recovered := r.confirmDone(ctx, obs, &input, status.Summarize(input))
	next := NextStatus(ms, sum, in.updateRev, now)
	if specErr != nil || actErr != nil {
		next.ObservedGeneration = ms.Status.ObservedGeneration
	}
	r.recordEvents(ms, &next, sum, recovered)
	r.Metrics.observeServing(ms, sum)
	if len(ms.Spec.Roles) > 0 {
		next.Plan = status.PlanStatus(in.rolePlan, in.updateRev)
	} else {
		next.Plan = nil
	}
	key := types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}
	if equality.Semantic.DeepEqual(ms.Status, next) {
		r.detailHeld.Delete(key) // nothing waits to be written
		return sum, 0, nil
	}
	// A pass that ends in a terminal error (the spec cannot be served) is not looked at again
	// until something changes: it writes its detail now, or that could stay unwritten.
	if wait := r.statusDetailWait(key, ms.Status, next, now); wait > 0 && specErr == nil {
		log.FromContext(ctx).V(1).Info("Status detail held back", "wait", wait)
		return sum, wait, nil
	}
	r.Failpoints.Hit("before-status", client.ObjectKeyFromObject(ms).String())
	// The patch is computed from the status alone: marshalling the whole serving twice (its spec
	// and template too) for a diff of its status was a third of a pass's CPU.
	om := metav1.ObjectMeta{Namespace: ms.Namespace, Name: ms.Name}
	base := &v1.ModelServing{ObjectMeta: om, Status: ms.Status}
	written := &v1.ModelServing{ObjectMeta: om, Status: next}
	patch := client.MergeFrom(base)
	var change []byte // what the write changes, for the debug log
	if debug := log.FromContext(ctx).V(1); debug.Enabled() {
		change, _ = patch.Data(written)
	}
	if err := r.patchServing(ctx, written, patch, "status"); err != nil {
		return sum, 0, fmt.Errorf("write status: %w", err)
	}
	log.FromContext(ctx).V(1).Info("Wrote the status", "phase", next.Phase, "ready", next.ReadyGroups, "resourceVersion", written.ResourceVersion, "change", string(change))
	r.statusWritten.Store(key, ownStatus{at: now, over: ms.ResourceVersion, rv: written.ResourceVersion, status: &next})
	r.detailHeld.Delete(key)
	r.echoes.wrote(key, written.ResourceVersion)
	ms.Status = next
	return sum, 0, nil
}

// ownStatus is the status this process last wrote of a serving: when, over which resourceVersion
// of the serving (the one the pass read), and the resourceVersion the write returned.
type ownStatus struct {
	at       time.Time
	over, rv string
	status   *v1.ModelServingStatus // nil once the cache has seen the write
}

// withOwnStatus gives a serving read from the cache the status this process last wrote of it,
// when the cache still holds the serving at the resourceVersion that write was made over: the
// cache has not seen the write yet (it trails by milliseconds, by seconds in a burst). The pass
// then decides from the status the serving has, not from the one it had, and does not write it
// again: in a burst of 1000, one status write in seven repeated the one before it (the API server
// answered both with the same resourceVersion), made by a pass that a pod's event brought before
// the cache saw the first. Anyone else's write moves the resourceVersion away from the one the
// write was made over, and the cache's serving is then taken as it is.
func (r *Reconciler) withOwnStatus(ms *v1.ModelServing) {
	v, ok := r.statusWritten.Load(client.ObjectKeyFromObject(ms))
	if !ok {
		return
	}
	own := v.(ownStatus)
	if own.status == nil {
		return
	}
	if own.over == own.rv || ms.ResourceVersion != own.over {
		// The cache has seen the write (or someone else's since): the status written is not
		// needed any more, only when it was written (a thousand servings' statuses, kept twice).
		r.statusWritten.Store(client.ObjectKeyFromObject(ms), ownStatus{at: own.at})
		return
	}
	ms.Status = *own.status.DeepCopy()
	ms.ResourceVersion = own.rv
}

// actProblem is the Degraded condition of a write that failed: LeaderWorkerSetMissing when the
// API server does not serve LeaderWorkerSet (its CRD was removed), ApplyFailed otherwise.
func actProblem(err error) status.Problem {
	if lwsMissing(err) {
		// The message does not quote the error, which changes while the CRD goes (terminating,
		// then not found): the status is written once, not at every pass.
		return status.Problem{Reason: v1.ReasonLeaderWorkerSetMissing, Message: "the API server does not serve LeaderWorkerSet " +
			"(leaderworkersets.leaderworkerset.x-k8s.io): install LeaderWorkerSet, or run kubectl llm install --lws=embedded and let the operator host it"}
	}
	return status.Problem{Reason: v1.ReasonApplyFailed, Message: err.Error() + " (retrying; check the API server, its admission webhooks and the operator's permissions)"}
}

// lwsMissing: err says the API server does not serve LeaderWorkerSet: no such kind, no such
// resource, or its CRD being deleted (creates refused while it terminates).
func lwsMissing(err error) bool {
	if err == nil {
		return false
	}
	return meta.IsNoMatchError(err) ||
		apierrors.IsNotFound(err) && strings.Contains(err.Error(), "the server could not find the requested resource") && strings.Contains(err.Error(), "leaderworkersets") ||
		apierrors.IsForbidden(err) && strings.Contains(err.Error(), "custom resource definition is terminating") && strings.Contains(err.Error(), "leaderworkersets")
}

// NextStatus is the status a pass writes, from the summary. Conditions keep their transition
// times when their status does not change.
func NextStatus(ms *v1.ModelServing, sum status.Summary, updateRev string, now time.Time) v1.ModelServingStatus {
	prev := ms.Status
	next := *prev.DeepCopy()
	next.ObservedGeneration = ms.Generation
	for _, c := range sum.Conditions() {
		c.ObservedGeneration = ms.Generation
		meta.SetStatusCondition(&next.Conditions, withTime(c, now))
	}
	next.Phase = sum.Phase
	next.Replicas, next.ReadyReplicas, next.UpdatedReplicas = sum.Replicas, sum.Ready, sum.Updated
	next.ReadyGroups = fmt.Sprintf("%d/%d", sum.Ready, sum.Desired)
	// The scale subresource counts groups (status.replicas, every role's with spec.roles), so its
	// selector selects one pod per group, the leaders, as LWS's hpaPodSelector does: an autoscaler
	// multiplies what it measures by the pods it selects, and the workers would double a group.
	next.Selector = labels.SelectorFromSet(leaderSelector(ms.Name)).String()
	if updateRev != "" { // "" when spec.template does not decode: keep what was recorded
		next.UpdateRevision = updateRev
	}
	if updateRev != "" && (next.CurrentRevision == "" || (sum.Done && sum.Progress.Reason == v1.ReasonRolloutComplete)) {
		next.CurrentRevision = updateRev
	}
	if sum.Progressed || next.LastProgressTime == nil {
		t := metav1.NewTime(now)
		next.LastProgressTime = &t
	}
	if ms.Spec.Restart != nil && sum.RestartDone {
		next.RestartID = ms.Spec.Restart.ID
	}
	next.Endpoint = naming.Endpoint(ms)
	next.Groups = groupStatuses(sum, updateRev)
	next.Roles = nil
	for _, rs := range sum.Roles {
		next.Roles = append(next.Roles, v1.RoleStatus{
			Name: rs.Role, Replicas: rs.Replicas, ReadyReplicas: rs.Ready, UpdatedReplicas: rs.Updated,
			ReadyGroups: fmt.Sprintf("%d/%d", rs.Ready, rs.Desired), Groups: groupStatuses(rs, updateRev),
			Endpoint: naming.RoleEndpoint(ms, rs.Role), RestartID: roleRestartID(ms, prev, rs),
		})
	}
	return next
}

// roleRestartID is the role's spec.roles[].restart.id once every group of the role runs it (and the
// serving's restart id), else the one the status recorded.
func roleRestartID(ms *v1.ModelServing, prev v1.ModelServingStatus, rs status.Summary) string {
	if r := ms.Spec.Role(rs.Role); r != nil && r.Restart != nil && rs.RestartDone {
		return r.Restart.ID
	}
	for _, p := range prev.Roles {
		if p.Name == rs.Role {
			return p.RestartID
		}
	}
	return ""
}

func optionalTime(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t)
	return &mt
}

func withTime(c metav1.Condition, now time.Time) metav1.Condition {
	c.LastTransitionTime = metav1.NewTime(now)
	return c
}

func groupStatuses(sum status.Summary, updateRev string) []v1.GroupStatus {
	var out []v1.GroupStatus
	for _, g := range sum.Groups {
		if len(out) == v1.MaxStatusGroups {
			break
		}
		out = append(out, v1.GroupStatus{
			Index: int32(g.Index), Revision: g.Revision, Ready: g.Ready(), ReadyPods: int32(g.ReadyPods),
			Size: int32(g.Size), Reason: g.Reason(), Since: optionalTime(g.Since()),
		})
	}
	return out
}

// EventGroupsRecovered is the reason of the event a serving gets when its groups are all ready
// again after some went not ready with no rollout under way (a group recreated after one of its
// pods failed, say); a rollout's end is RolloutComplete.
const EventGroupsRecovered = "GroupsRecovered"

// recordEvents emits events for transitions between the stored and the next status. recovered:
// the serving is done again after a recovery, not after a rollout (see confirmDone).
func (r *Reconciler) recordEvents(ms *v1.ModelServing, next *v1.ModelServingStatus, sum status.Summary, recovered bool) {
	if r.Recorder == nil {
		return
	}
	prev := ms.Status
	key := client.ObjectKeyFromObject(ms)
	now := r.Clock.Now()
	if prev.UpdateRevision != "" && next.UpdateRevision != "" && prev.UpdateRevision != next.UpdateRevision {
		r.rolloutStart.Store(key, now)
		r.Recorder.Eventf(ms, nil, corev1.EventTypeNormal, "RolloutStarted", "Rollout",
			"rolling out revision %s (was %s)", next.UpdateRevision, prev.UpdateRevision)
	}
	if prev.Replicas != 0 && sum.Desired != prevDesired(prev) && prev.ReadyGroups != "" {
		r.Recorder.Eventf(ms, nil, corev1.EventTypeNormal, "Scaled", "Scale", "desired groups now %d", sum.Desired)
	}
	prevProg := meta.FindStatusCondition(prev.Conditions, v1.ConditionProgressing)
	becameDone := sum.Progress.Reason == v1.ReasonRolloutComplete && (prevProg == nil || prevProg.Reason != v1.ReasonRolloutComplete)
	if becameDone {
		if recovered {
			// No rollout started: groups went not ready and came back (see confirmDone).
			r.Recorder.Eventf(ms, nil, corev1.EventTypeNormal, EventGroupsRecovered, "Recover", "every group ready again: %s", sum.Progress.Message)
		} else {
			r.Recorder.Eventf(ms, nil, corev1.EventTypeNormal, "RolloutComplete", "Rollout", "%s", sum.Progress.Message)
			if t, ok := r.rolloutStart.LoadAndDelete(key); ok {
				r.Metrics.observeRollout(now.Sub(t.(time.Time)))
			}
		}
	}
	if sum.Progress.Reason == v1.ReasonProgressDeadlineExceeded && (prevProg == nil || prevProg.Reason != sum.Progress.Reason) {
		r.Recorder.Eventf(ms, nil, corev1.EventTypeWarning, v1.ReasonProgressDeadlineExceeded, "Rollout", "%s", sum.Progress.Message)
	}
	prevDeg := meta.FindStatusCondition(prev.Conditions, v1.ConditionDegraded)
	if sum.Degraded.Status == metav1.ConditionTrue && (prevDeg == nil || prevDeg.Reason != sum.Degraded.Reason) {
		r.Recorder.Eventf(ms, nil, corev1.EventTypeWarning, sum.Degraded.Reason, "Reconcile", "%s", sum.Degraded.Message)
	}
}

func prevDesired(s v1.ModelServingStatus) int32 {
	var ready, desired int32
	if _, err := fmt.Sscanf(s.ReadyGroups, "%d/%d", &ready, &desired); err != nil {
		return -1
	}
	return desired
}

// finalize deletes the children and removes the finalizer once they are gone.
func (r *Reconciler) finalize(ctx context.Context, ms *v1.ModelServing) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(ms, v1.FinalizerChildren) {
		return ctrl.Result{}, nil
	}
	if uid, ok := r.released.Load(client.ObjectKeyFromObject(ms)); ok && uid == ms.UID {
		// Our finalizer went in an earlier pass; the cache had not seen it yet when an event of
		// the children or pods queued this one.
		return ctrl.Result{}, nil
	}
	if namespaceDeleted(ctx, r.Namespaces, ms.Namespace) {
		// The namespace controller deletes every object of the namespace, the children with the
		// serving, and the namespace goes only once they are gone: nothing is left behind without
		// us, and reading and deleting each child again (hundreds of servings at once, when a
		// namespace goes) would only take the API server from the servings that still run.
		log.FromContext(ctx).V(1).Info("The serving's namespace is being deleted: its children go with it")
		return r.removeFinalizer(ctx, ms)
	}
	if controllerutil.ContainsFinalizer(ms, metav1.FinalizerOrphanDependents) {
		// kubectl delete --cascade=orphan: the user keeps the children and their groups running,
		// and a serving made again with this name adopts them (see adoptable).
		log.FromContext(ctx).Info("Deleted with orphan propagation: leaving the children in place")
		named, revisions, err := r.childrenOf(ctx, ms, r.live(), revision.ListOptions(ms.Namespace, ms.Name))
		if err != nil {
			return ctrl.Result{}, err
		}
		if err := r.release(ctx, ms, append(named, revisions...)); err != nil {
			return ctrl.Result{}, err
		}
		return r.removeFinalizer(ctx, ms)
	}
	// The caches first: a pass woken by the deletion of a child that waits on a finalizer (or by
	// its pods) reads nothing from the API server while the caches still hold it.
	cached, err := r.deleteChildren(ctx, ms, r.children(), r.revisionsOf(ms), true)
	remaining := cached.held
	if err == nil && cached.held == cached.deleted {
		// The caches hold no child but those this pass deleted. Each went at once when the caches'
		// copy, the one the deletion was conditioned on, had no finalizer; and the caches miss
		// none when every child this process made is in them (another process's, made in the
		// moment before the deletion, the garbage collector takes after the serving). Otherwise
		// the API server is asked now, not at the deletions' watch events: the serving goes in
		// this pass either way.
		remaining = 0
		if cached.goneAtOnce < cached.deleted || r.unseen.any(ctx, client.ObjectKeyFromObject(ms), r.children()) {
			var now childCount
			now, err = r.deleteChildren(ctx, ms, r.live(), revision.ListOptions(ms.Namespace, ms.Name), false)
			remaining = now.held
		}
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if remaining > 0 {
		// The children's deletions wake the serving; the recheck is a backstop. Either way the
		// pass waits behind those of live servings.
		return ctrl.Result{RequeueAfter: finalizeRecheck, Priority: &bulkPriority}, nil
	}
	r.Failpoints.Hit("before-finalizer-removal", client.ObjectKeyFromObject(ms).String())
	return r.removeFinalizer(ctx, ms)
}

// childrenOf is the children a serving can have: its LeaderWorkerSet and Service (one of each per
// role with roles), by name only, and the ControllerRevisions that from lists, as read.
func (r *Reconciler) childrenOf(ctx context.Context, ms *v1.ModelServing, from client.Reader, listRevisions []client.ListOption) (named, revisions []client.Object, err error) {
	named = []client.Object{
		&lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ms.Namespace, Name: ms.Name}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ms.Namespace, Name: naming.ServiceName(ms.Name)}},
	}
	for _, role := range ms.Spec.Roles {
		named = append(named,
			&lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ms.Namespace, Name: naming.RoleWorkloadName(ms.Name, role.Name)}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ms.Namespace, Name: naming.RoleServiceName(ms.Name, role.Name)}})
	}
	revs := &appsv1.ControllerRevisionList{}
	if err := from.List(ctx, revs, listRevisions...); err != nil {
		return nil, nil, fmt.Errorf("list ControllerRevisions of %s: %w", client.ObjectKeyFromObject(ms), err)
	}
	for i := range revs.Items {
		revisions = append(revisions, &revs.Items[i])
	}
	return named, revisions, nil
}

// childCount counts what deleteChildren found and did: the serving's children it held (held),
// those of them it deleted (deleted), and of those the ones known gone at once (goneAtOnce).
type childCount struct{ held, deleted, goneAtOnce int }

// deleteChildren deletes the serving's children that from holds and that are not being deleted
// yet. With exact, each deletion is conditioned on the resourceVersion read (from a cache): a
// child changed since, a finalizer added by someone say, is not deleted by this pass but counted
// held and deleted and not gone (the caller then asks the API server). A child deleted at the
// version read with no finalizer on it is gone at once (background propagation adds none).
func (r *Reconciler) deleteChildren(ctx context.Context, ms *v1.ModelServing, from client.Reader, listRevisions []client.ListOption, exact bool) (childCount, error) {
	var out childCount
	named, revisions, err := r.childrenOf(ctx, ms, from, listRevisions)
	if err != nil {
		return out, err
	}
	found := revisions
	for _, child := range named {
		if err := from.Get(ctx, client.ObjectKeyFromObject(child), child); err != nil {
			if apierrors.IsNotFound(err) || lwsMissing(err) {
				continue // gone, or a LeaderWorkerSet that cannot exist (its CRD is gone)
			}
			return out, err
		}
		found = append(found, child)
	}
	for _, child := range found {
		if ownership(ms, child) != childOurs {
			continue // not ours
		}
		out.held++
		if !child.GetDeletionTimestamp().IsZero() {
			continue
		}
		opts := []client.DeleteOption{client.PropagationPolicy(metav1.DeletePropagationBackground)}
		if exact {
			uid, rv := child.GetUID(), child.GetResourceVersion()
			opts = append(opts, client.Preconditions{UID: &uid, ResourceVersion: &rv})
		}
		err := r.Client.Delete(ctx, child, opts...)
		switch {
		case apierrors.IsNotFound(err):
			out.goneAtOnce++
		case exact && apierrors.IsConflict(err):
			out.deleted++ // not gone: changed since the caches' copy, the API server is asked
			continue
		case err != nil:
			return out, fmt.Errorf("delete %s: %w", child.GetName(), err)
		case len(child.GetFinalizers()) == 0:
			out.goneAtOnce++
		}
		out.deleted++
		r.unseen.drop(client.ObjectKeyFromObject(ms), childKey{kindOf(child), client.ObjectKeyFromObject(child)})
		r.Failpoints.Hit("finalize-after-delete", client.ObjectKeyFromObject(ms).String())
	}
	return out, nil
}

// servingKeyOf is the serving a child's key (its LeaderWorkerSet's, a role's) belongs to.
func servingKeyOf(child types.NamespacedName) types.NamespacedName {
	return types.NamespacedName{Namespace: child.Namespace, Name: servingOfChild(child.Name)}
}

// kindOf names a child's kind for the bookkeeping of childKey.
func kindOf(child client.Object) string {
	switch child.(type) {
	case *lwsv1.LeaderWorkerSet:
		return "LeaderWorkerSet"
	case *corev1.Service:
		return "Service"
	default:
		return "ControllerRevision"
	}
}

// release removes the serving's owner reference from its children, as the garbage collector
// would for orphan propagation, but before the finalizer goes rather than after: the collector
// orphans with a JSON patch, which the API server refuses for revisions recorded before their
// data was written with sorted keys ("data: field is immutable"), and it deletes a dependent
// whose owner is gone if its graph missed that dependent. A merge patch has neither problem.
func (r *Reconciler) release(ctx context.Context, ms *v1.ModelServing, children []client.Object) error {
	for _, child := range children {
		if err := r.live().Get(ctx, client.ObjectKeyFromObject(child), child); err != nil {
			if apierrors.IsNotFound(err) || lwsMissing(err) {
				continue // gone, or a LeaderWorkerSet that cannot exist (its CRD is gone)
			}
			return err
		}
		if ownership(ms, child) != childOurs {
			continue
		}
		patch := client.MergeFromWithOptions(child.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
		var refs []metav1.OwnerReference
		for _, ref := range child.GetOwnerReferences() {
			if ref.UID != ms.UID {
				refs = append(refs, ref)
			}
		}
		child.SetOwnerReferences(refs)
		if err := r.Client.Patch(ctx, child, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("orphan %s: %w", child.GetName(), err)
		}
		r.Failpoints.Hit("finalize-after-release", client.ObjectKeyFromObject(ms).String())
	}
	return nil
}

// removeFinalizer lets a deleted serving go.
func (r *Reconciler) removeFinalizer(ctx context.Context, ms *v1.ModelServing) (ctrl.Result, error) {
	patch := client.MergeFromWithOptions(ms.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(ms, v1.FinalizerChildren)
	if err := r.patchServing(ctx, ms, patch, ""); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	r.released.Store(client.ObjectKeyFromObject(ms), ms.UID)
	r.Metrics.forget(client.ObjectKeyFromObject(ms))
	return ctrl.Result{}, nil
}

// servingOfChild is the serving a child's base name (<serving>, or <serving>-<role> for a role's
// children) belongs to. A serving's name cannot end in -prefill or -decode, so the two never mix.
func servingOfChild(base string) string {
	if serving, _ := naming.RoleOfWorkload("LeaderWorkerSet", base); serving != "" {
		return serving
	}
	return base
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// SetupWithManager registers the reconciler: it owns LWS, Services and ControllerRevisions and
// watches the pods of servings (the cache holds only those), one work item per serving.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	children := r.ChildrenCache
	if children == nil {
		children = mgr.GetCache()
	}
	lwsSource := r.LWSSource
	if lwsSource == nil {
		lwsSource = children
	}
	if err := indexByServing(mgr.GetFieldIndexer(), children); err != nil {
		return err
	}
	r.indexed = true
	servings := mgr.GetCache()
	if r.Namespaces == nil {
		r.Namespaces = servings
	}
	batch := cmp.Or(r.PodEventBatch, DefaultPodEventBatch)
	podToServing := mappedToServing(servings, max(batch, 0), func(_ context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[v1.LabelName]
		if name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
	})
	// FailedCreate events of our LeaderWorkerSets and their StatefulSets (the cache holds only
	// FailedCreate events) wake the serving they are about.
	eventToServing := mappedToServing(servings, 0, func(_ context.Context, o client.Object) []reconcile.Request {
		e, ok := o.(*corev1.Event)
		if !ok {
			return nil
		}
		name := servingOfChild(naming.ServingOfWorkload(e.InvolvedObject.Kind, e.InvolvedObject.Name))
		if name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: e.Namespace, Name: name}}}
	})
	// The LWS and the Service are mapped to their serving by name, not by owner: an object with a
	// child's name that is not ours (a NameConflict) wakes the serving too when the cache holds it
	// (every LWS, with embedded LWS); otherwise the serving looks again every conflictRecheck.
	nameMapper := func(serving func(string) string) handler.MapFunc {
		return func(_ context.Context, o client.Object) []reconcile.Request {
			name := servingOfChild(serving(o.GetName()))
			if name == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
		}
	}
	lwsByName := nameMapper(func(n string) string { return n })
	lwsToServing := lwsEvents(mappedToServing(servings, 0, lwsByName), mappedToServing(servings, max(batch, 0), lwsByName))
	// Revisions are mapped by their controller, a ModelServing.
	ownedBy := mappedToServing(servings, 0, func(_ context.Context, o client.Object) []reconcile.Request {
		ref := metav1.GetControllerOf(o)
		if ref == nil || ref.Kind != "ModelServing" || !strings.HasPrefix(ref.APIVersion, v1.GroupVersion.Group+"/") {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}}}
	})
	// The servings are watched with Watches, not For, so that a serving being deleted is queued
	// at the bulk priority (see priority.go); the log keys are the ones For would give.
	base := mgr.GetLogger().WithValues("controller", ControllerName, "controllerGroup", v1.GroupVersion.Group, "controllerKind", "ModelServing")
	logFor := func(req *reconcile.Request) logr.Logger {
		if req == nil {
			return base
		}
		return base.WithValues("ModelServing", klog.KRef(req.Namespace, req.Name), "namespace", req.Namespace, "name", req.Name)
	}
	r.services = newServiceMaker(r, cmp.Or(r.ServiceCreators, DefaultServiceCreators), base.WithName("service-maker"))
	if err := mgr.Add(r.services); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		Watches(&v1.ModelServing{}, servingEvents(r.echoes.echo)).
		WatchesRawSource(source.Kind(lwsSource, client.Object(&lwsv1.LeaderWorkerSet{}), lwsToServing)).
		WatchesRawSource(source.Kind(children, client.Object(&corev1.Service{}), serviceToServing(servings, nameMapper(naming.ServingOfService)))).
		WatchesRawSource(source.Kind(children, client.Object(&appsv1.ControllerRevision{}), withoutCreateEchoes(&r.revisionEchoes, ownedBy))).
		Watches(&corev1.Pod{}, podToServing).
		Watches(&corev1.Event{}, eventToServing).
		// The namespaces' metadata, for namespaceDeleted; a namespace whose deletion begins
		// queues its servings (see namespaceEvents).
		WatchesMetadata(&corev1.Namespace{}, namespaceEvents(servings)).
		WatchesRawSource(source.Channel(r.services.wake, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.Workers, DefaultServingWorkers), LogConstructor: logFor}).
		Complete(r)
}
