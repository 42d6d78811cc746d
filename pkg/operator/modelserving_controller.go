// Package operator reconciles ModelServings into LeaderWorkerSet groups: one LeaderWorkerSet,
// one Service for the leaders and ControllerRevisions of the pod-affecting spec per serving.
// Reconcile is observe → compute (pure: desired.go, podtemplate.go, planner.go) → act
// (server-side apply, skipped when the intent is unchanged) → report (one status write, through
// pkg/status). It also builds the manager that hosts the reconciler and, optionally, LWS.
// It imports api, naming (names and labels), revision (revision encoding), scheme and status;
// never cli or tui. Nothing but the `operator` command and tests imports it.
package operator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	lwsac "sigs.k8s.io/lws/client-go/applyconfiguration/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// ControllerName is the name of the ModelServing controller (LWS's own are "leaderworkerset" and "pod").
const ControllerName = "modelserving"

// DefaultHistoryLimit is how many ControllerRevisions a serving keeps.
const DefaultHistoryLimit = 10

// Reconciler reconciles one ModelServing.
type Reconciler struct {
	Client   client.Client
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	// HistoryLimit bounds the ControllerRevisions kept per serving.
	HistoryLimit int
	Metrics      *Metrics

	// applied remembers, per child, what our last apply produced (the LWS's generation, the
	// Service's resourceVersion, both from the apply response), so a child that someone else
	// changed is applied again although our intent did not change. It starts empty: after a
	// restart every child is applied once (an unchanged apply writes nothing), so a hand edit made
	// while the operator was down is undone too.
	applied sync.Map // childKey -> int64 (LWS generation) or string (Service resourceVersion)
	// rolloutStart remembers when a serving's current rollout began, for the duration metric.
	rolloutStart sync.Map // types.NamespacedName -> time.Time
}

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
	// updateRev is the revision of the current spec; "" when spec.template does not decode.
	updateRev string
}

// +kubebuilder:rbac:groups=serving.kubectl-llm.dev,resources=modelservings,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=serving.kubectl-llm.dev,resources=modelservings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=serving.kubectl-llm.dev,resources=modelservings/finalizers,verbs=update
// +kubebuilder:rbac:groups=leaderworkerset.x-k8s.io,resources=leaderworkersets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
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
			r.Metrics.forget(req.NamespacedName)
			r.applied.Delete(childKey{"LeaderWorkerSet", req.NamespacedName})
			r.applied.Delete(childKey{"Service", req.NamespacedName})
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !ms.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, ms)
	}
	if !controllerutil.ContainsFinalizer(ms, v1.FinalizerChildren) {
		patch := client.MergeFromWithOptions(ms.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(ms, v1.FinalizerChildren)
		if err := r.Client.Patch(ctx, ms, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
	}

	obs, stale, err := r.observe(ctx, ms)
	if err != nil {
		return ctrl.Result{}, err
	}
	if stale {
		// Children of an earlier serving with the same name are being removed; look again soon.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}

	plan, actErr := r.act(ctx, obs)
	var specErr *specError
	if errors.As(actErr, &specErr) {
		// A spec the operator cannot serve: record it and do not retry until the spec changes.
		if err := r.report(ctx, obs, plan, specErr, nil); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, reconcile.TerminalError(specErr)
	}
	if actErr != nil {
		// Retried with backoff; the status says why (observedGeneration stays where it was).
		applyErr := status.Problem{Reason: v1.ReasonApplyFailed, Message: actErr.Error() + " (retrying; check the API server, its admission webhooks and the operator's permissions)"}
		if err := r.report(ctx, obs, plan, nil, &applyErr); err != nil {
			log.FromContext(ctx).Error(err, "Failed to report an apply error in the status")
		}
		return ctrl.Result{}, actErr
	}
	if err := r.report(ctx, obs, plan, nil, nil); err != nil {
		return ctrl.Result{}, err
	}
	if len(obs.conflicts) > 0 {
		// The by-name watches wake the serving when the other object goes; this is a safety net.
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	return ctrl.Result{RequeueAfter: requeueAfter(ms)}, nil
}

// requeueAfter is how long to wait before looking again when nothing is watched to change:
// only the progress deadline needs a clock.
func requeueAfter(ms *v1.ModelServing) time.Duration {
	c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing)
	if c != nil && (c.Reason == v1.ReasonRolloutComplete || c.Reason == v1.ReasonCanaryHeld) {
		return 0
	}
	return 30 * time.Second
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

	lws := &lwsv1.LeaderWorkerSet{}
	switch err := r.Client.Get(ctx, key, lws); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, false, fmt.Errorf("get LeaderWorkerSet %s: %w", key, err)
	default:
		switch own, err := r.claim(ctx, ms, lws); {
		case err != nil:
			return nil, false, err
		case own == childOurs:
			obs.lws = lws
		case own == childStale:
			stale = true
		default:
			obs.lwsConflict = true
			obs.conflicts = append(obs.conflicts, nameConflict("LeaderWorkerSet", lws))
		}
	}

	svc := &corev1.Service{}
	skey := types.NamespacedName{Namespace: ms.Namespace, Name: naming.ServiceName(ms.Name)}
	switch err := r.Client.Get(ctx, skey, svc); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, false, fmt.Errorf("get Service %s: %w", skey, err)
	default:
		switch own, err := r.claim(ctx, ms, svc); {
		case err != nil:
			return nil, false, err
		case own == childOurs:
			obs.service = svc
		case own == childStale:
			stale = true
		default:
			obs.serviceConflict = true
			obs.conflicts = append(obs.conflicts, nameConflict("Service", svc))
		}
	}

	revs := &appsv1.ControllerRevisionList{}
	if err := r.Client.List(ctx, revs, revision.ListOptions(ms.Namespace, ms.Name)...); err != nil {
		return nil, false, fmt.Errorf("list ControllerRevisions of %s: %w", key, err)
	}
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
	if err := r.Client.List(ctx, pods, client.InNamespace(ms.Namespace), client.MatchingLabels{v1.LabelName: ms.Name}); err != nil {
		return nil, false, fmt.Errorf("list pods of %s: %w", key, err)
	}
	obs.pods = pods.Items

	events := &corev1.EventList{}
	if err := r.Client.List(ctx, events, client.InNamespace(ms.Namespace)); err != nil {
		return nil, false, fmt.Errorf("list events of %s: %w", key, err)
	}
	for _, e := range events.Items {
		io := e.InvolvedObject
		if e.Reason != status.EventFailedCreate || naming.ServingOfWorkload(io.Kind, io.Name) != ms.Name {
			continue
		}
		if io.Kind == "LeaderWorkerSet" && (obs.lws == nil || (io.UID != "" && io.UID != obs.lws.UID)) {
			continue // about a LeaderWorkerSet that is not this serving's own
		}
		obs.events = append(obs.events, e)
	}
	return obs, stale, nil
}

// childOwnership is how a child with one of our names relates to a serving.
type childOwnership int

const (
	childOurs    childOwnership = iota // controlled by this serving (our group, its live UID)
	childStale                         // controlled by an earlier ModelServing of our group with the same name
	childForeign                       // anything else: no controller, or another kind or group
)

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
	if own != childStale || !child.GetDeletionTimestamp().IsZero() {
		return own, nil
	}
	uid := child.GetUID()
	err := r.Client.Delete(ctx, child, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return own, fmt.Errorf("delete %T %s of an earlier serving: %w", child, child.GetName(), err)
	}
	log.FromContext(ctx).Info("Deleted a child of an earlier serving with the same name", "child", child.GetName(), "uid", uid)
	return own, nil
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

// act records the revision and applies the LWS and Service. It returns the plan it applied.
func (r *Reconciler) act(ctx context.Context, obs *observed) (Plan, error) {
	ms := obs.serving
	updateSpec, err := revision.SpecOf(ms.Spec)
	if err != nil {
		return Plan{}, &specError{err}
	}
	if err := ValidateSpec(ms); err != nil {
		return Plan{}, &specError{err}
	}
	updateRev := revision.Name(ms.Name, updateSpec)
	obs.updateRev = updateRev

	lwsRev := ""
	if obs.lws != nil {
		lwsRev = lwsTemplateRevision(obs.lws)
	}
	// Groups that still have pods, counted from their (bounded) LWS index labels: a pod that only
	// carries our name label is not a group a Recreate must wait for.
	existing := int32(len(status.BuildGroups(obs.pods, 0, int(ms.Spec.GroupSize), r.Clock.Now())))
	if obs.lws != nil {
		existing = max(existing, obs.lws.Status.Replicas)
	}
	plan := PlanRollout(PlanInput{
		Strategy: ms.Spec.Rollout.Strategy, Paused: ms.Spec.Rollout.Paused, Desired: ptrOr(ms.Spec.Replicas, 1),
		UpdateRevision: updateRev, LWSRevision: lwsRev, ExistingGroups: existing,
	})

	// Validate the update revision before recording it: a spec that cannot become pods is terminal.
	if _, err := DesiredLeaderWorkerSet(LWSInput{Serving: ms, Revision: updateRev, RevisionSpec: updateSpec, Replicas: plan.Replicas}); err != nil {
		return plan, &specError{err}
	}
	if err := r.recordRevision(ctx, obs, updateSpec, updateRev); err != nil {
		return plan, err
	}

	tmplSpec := updateSpec
	if plan.TemplateRevision != updateRev {
		found := false
		for i := range obs.revisions {
			if obs.revisions[i].Name == plan.TemplateRevision {
				s, err := revision.Decode(&obs.revisions[i])
				if err != nil {
					return plan, err
				}
				tmplSpec, found = s, true
			}
		}
		if !found { // the running revision was pruned: nothing to hold on to
			plan = Plan{TemplateRevision: updateRev, Replicas: ptrOr(ms.Spec.Replicas, 1)}
		}
	}
	lws, err := DesiredLeaderWorkerSet(LWSInput{Serving: ms, Revision: plan.TemplateRevision, RevisionSpec: tmplSpec, Replicas: plan.Replicas})
	if err != nil {
		return plan, &specError{err}
	}
	if !obs.lwsConflict {
		if err := r.applyLWS(ctx, obs, lws); err != nil {
			return plan, err
		}
	}
	if !obs.serviceConflict {
		if err := r.applyService(ctx, obs); err != nil {
			return plan, err
		}
	}
	return plan, r.pruneRevisions(ctx, obs, updateRev, plan.TemplateRevision, ms.Status.CurrentRevision)
}

// childKey names a child in the applied bookkeeping: its kind and its serving.
type childKey struct {
	kind    string
	serving types.NamespacedName
}

func (r *Reconciler) applyLWS(ctx context.Context, obs *observed, desired *lwsac.LeaderWorkerSetApplyConfiguration) error {
	hash := IntentHash(desired)
	key := types.NamespacedName{Namespace: obs.serving.Namespace, Name: obs.serving.Name}
	ck := childKey{"LeaderWorkerSet", key}
	if live := obs.lws; live != nil && live.Annotations[AnnotationAppliedHash] == hash {
		// Skip only what we know we made: the generation our last apply returned. Status writes
		// (LWS's own) do not move the generation; spec edits by anyone else do.
		if gen, known := r.applied.Load(ck); known && gen.(int64) == live.Generation {
			return nil
		}
	}
	desired.WithAnnotations(map[string]string{AnnotationAppliedHash: hash})
	if err := r.apply(ctx, desired, "LeaderWorkerSet", key); err != nil {
		return err
	}
	r.applied.Store(ck, ptr.Deref(desired.Generation, 0)) // the apply response, not a cache read
	return nil
}

func (r *Reconciler) applyService(ctx context.Context, obs *observed) error {
	desired := DesiredService(obs.serving)
	hash := IntentHash(desired)
	ck := childKey{"Service", types.NamespacedName{Namespace: obs.serving.Namespace, Name: obs.serving.Name}}
	if live := obs.service; live != nil && live.Annotations[AnnotationAppliedHash] == hash {
		// A Service has no generation: skip only at the resourceVersion our last apply returned.
		if rv, known := r.applied.Load(ck); known && rv.(string) == live.ResourceVersion {
			return nil
		}
	}
	desired.WithAnnotations(map[string]string{AnnotationAppliedHash: hash})
	key := types.NamespacedName{Namespace: obs.serving.Namespace, Name: naming.ServiceName(obs.serving.Name)}
	if err := r.apply(ctx, desired, "Service", key); err != nil {
		return err
	}
	r.applied.Store(ck, ptr.Deref(desired.ResourceVersion, ""))
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

// recordRevision makes sure a ControllerRevision records the update revision; a revision brought
// back (rollout undo) becomes the newest again.
func (r *Reconciler) recordRevision(ctx context.Context, obs *observed, spec revision.Spec, name string) error {
	ms := obs.serving
	next := revision.NextNumber(obs.revisions)
	for i := range obs.revisions {
		rev := &obs.revisions[i]
		if rev.Name != name {
			continue
		}
		if rev.Revision == next-1 || ms.Status.UpdateRevision == name {
			return nil
		}
		patch := client.MergeFrom(rev.DeepCopy())
		rev.Revision = next
		if err := r.Client.Patch(ctx, rev, patch); err != nil {
			return fmt.Errorf("renumber ControllerRevision %s: %w", name, err)
		}
		return nil
	}
	cr, err := revision.NewControllerRevision(ms, spec, next)
	if err != nil {
		return err
	}
	if err := r.Client.Create(ctx, cr); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache has not seen it yet
		}
		return fmt.Errorf("create ControllerRevision %s: %w", cr.Name, err)
	}
	obs.revisions = append(obs.revisions, *cr)
	return nil
}

func (r *Reconciler) pruneRevisions(ctx context.Context, obs *observed, inUse ...string) error {
	limit := r.HistoryLimit
	if limit <= 0 {
		limit = DefaultHistoryLimit
	}
	for _, rev := range revision.ToPrune(obs.revisions, limit, inUse...) {
		if err := r.Client.Delete(ctx, &rev); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("prune ControllerRevision %s: %w", rev.Name, err)
		}
	}
	return nil
}

// report writes the status once, from the shared summary. observedGeneration moves only when the
// pass succeeded (no spec error, no apply error).
func (r *Reconciler) report(ctx context.Context, obs *observed, plan Plan, specErr error, applyErr *status.Problem) error {
	ms := obs.serving
	now := r.Clock.Now()
	updateRev := obs.updateRev
	problems := obs.conflicts
	if applyErr != nil {
		problems = append([]status.Problem{*applyErr}, problems...)
	}
	sum := status.Summarize(status.Input{
		Serving: ms, LWS: obs.lws, Pods: obs.pods, UpdateRevision: updateRev,
		TemplateRevision: plan.TemplateRevision, SpecError: specErr, Problems: problems, Events: obs.events, Now: now,
	})
	next := NextStatus(ms, sum, updateRev, now)
	if specErr != nil || applyErr != nil {
		next.ObservedGeneration = ms.Status.ObservedGeneration
	}
	r.recordEvents(ms, &next, sum)
	r.Metrics.observeServing(ms, sum)
	if equality.Semantic.DeepEqual(ms.Status, next) {
		return nil
	}
	base := ms.DeepCopy()
	ms.Status = next
	if err := r.Client.Status().Patch(ctx, ms, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
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
	next.Selector = naming.PodSelector(ms.Name)
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
	return next
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

// recordEvents emits events for transitions between the stored and the next status.
func (r *Reconciler) recordEvents(ms *v1.ModelServing, next *v1.ModelServingStatus, sum status.Summary) {
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
	if sum.Progress.Reason == v1.ReasonRolloutComplete && (prevProg == nil || prevProg.Reason != v1.ReasonRolloutComplete) {
		r.Recorder.Eventf(ms, nil, corev1.EventTypeNormal, "RolloutComplete", "Rollout", "%s", sum.Progress.Message)
		if t, ok := r.rolloutStart.LoadAndDelete(key); ok {
			r.Metrics.observeRollout(now.Sub(t.(time.Time)))
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
	remaining := 0
	children := []client.Object{
		&lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ms.Namespace, Name: ms.Name}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ms.Namespace, Name: naming.ServiceName(ms.Name)}},
	}
	revs := &appsv1.ControllerRevisionList{}
	if err := r.Client.List(ctx, revs, revision.ListOptions(ms.Namespace, ms.Name)...); err != nil {
		return ctrl.Result{}, err
	}
	for i := range revs.Items {
		children = append(children, &revs.Items[i])
	}
	for _, child := range children {
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(child), child); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return ctrl.Result{}, err
		}
		if ownership(ms, child) != childOurs {
			continue // not ours
		}
		remaining++
		if child.GetDeletionTimestamp().IsZero() {
			if err := r.Client.Delete(ctx, child, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, fmt.Errorf("delete %s: %w", child.GetName(), err)
			}
		}
	}
	if remaining > 0 {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	patch := client.MergeFromWithOptions(ms.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(ms, v1.FinalizerChildren)
	if err := r.Client.Patch(ctx, ms, patch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	r.Metrics.forget(client.ObjectKeyFromObject(ms))
	return ctrl.Result{}, nil
}

func lwsTemplateRevision(lws *lwsv1.LeaderWorkerSet) string {
	return lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Labels[v1.LabelRevision]
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
	podToServing := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[v1.LabelName]
		if name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
	})
	// FailedCreate events of our LeaderWorkerSets and their StatefulSets (the cache holds only
	// FailedCreate events) wake the serving they are about.
	eventToServing := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		e, ok := o.(*corev1.Event)
		if !ok {
			return nil
		}
		name := naming.ServingOfWorkload(e.InvolvedObject.Kind, e.InvolvedObject.Name)
		if name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: e.Namespace, Name: name}}}
	})
	// The LWS and the Service are mapped to their serving by name, not by owner: an object with a
	// child's name that is not ours (a NameConflict) wakes the serving too, so it takes the name as
	// soon as the other object goes.
	byName := func(serving func(string) string) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			name := serving(o.GetName())
			if name == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
		})
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1.ModelServing{}).
		Watches(&lwsv1.LeaderWorkerSet{}, byName(func(n string) string { return n })).
		Watches(&corev1.Service{}, byName(naming.ServingOfService)).
		Owns(&appsv1.ControllerRevision{}).
		Watches(&corev1.Pod{}, podToServing).
		Watches(&corev1.Event{}, eventToServing).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}
