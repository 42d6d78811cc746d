package operator

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// settleRecheck is how soon a pass whose rollout waits only for its leader StatefulSet to settle
// looks again: the operator does not watch StatefulSets (the pods' events wake it too).
const settleRecheck = time.Second

// alreadyDone: the stored status calls the rollout of this generation and revision done already;
// there is nothing to confirm.
func alreadyDone(ms *v1.ModelServing, updateRev string) bool {
	c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing)
	return c != nil && c.Reason == v1.ReasonRolloutComplete && c.ObservedGeneration == ms.Generation &&
		ms.Status.ObservedGeneration == ms.Generation && ms.Status.UpdateRevision == updateRev
}

// confirmDone is the summary once the Service and the leader StatefulSet of the serving (of each
// role) have had their say, when sum is about to call a rollout done that the stored status does
// not: a Service not made yet (the Service maker creates it beside the passes, and under a burst
// it can come after the groups are ready) keeps it from being done, as the leader StatefulSet,
// read from the API server, does while it is not done rolling (see status.LeaderSetUnsettled for
// why the pods are not enough). One GET per LeaderWorkerSet, only then. in gets what is
// unsettled.
//
// recovered: the groups are back after a recovery, not at the end of a rollout. The stored status
// called this very state done before (same serving, generation and update revision, every
// LeaderWorkerSet at the generation it had then), and it went not done only because groups went
// not ready: a group recreated after a pod of it failed, say. Nothing was handed to a StatefulSet
// since, so its leader StatefulSet is not read; and it is no rollout that completes (see
// recordEvents).
func (r *Reconciler) confirmDone(ctx context.Context, obs *observed, in *status.Input, sum status.Summary) (_ status.Summary, recovered bool) {
	ms := obs.serving
	done := r.noteDone(obs, in.UpdateRevision)
	if sum.Progress.Reason != v1.ReasonRolloutComplete || done {
		return sum, false
	}
	recovered = r.doneBefore(obs, in.UpdateRevision)
	unsettled := false
	if len(in.Roles) == 0 && in.LWS != nil {
		in.Unsettled, in.UnsettledWatched = r.unsettled(ctx, ms.Namespace, obs.service, obs.serviceConflict, naming.ServiceName(ms.Name), in.LWS.Name, !recovered)
		unsettled = in.Unsettled != ""
	}
	for i := range in.Roles {
		if ri := &in.Roles[i]; ri.LWS != nil {
			ro := obs.role(ri.Name)
			ri.Unsettled, ri.UnsettledWatched = r.unsettled(ctx, ms.Namespace, ro.service, ro.serviceConflict, naming.RoleServiceName(ms.Name, ri.Name), ri.LWS.Name, !recovered)
			unsettled = unsettled || ri.Unsettled != ""
		}
	}
	if !unsettled {
		return sum, recovered
	}
	return status.Summarize(*in), false
}

// doneMark is what a serving's stored status called done: the serving (its UID, generation and
// update revision) and its LeaderWorkerSets (the UID and generation of each, in workloads).
type doneMark struct {
	uid        types.UID
	generation int64
	revision   string
	workloads  string
}

func doneMarkOf(obs *observed, updateRev string) doneMark {
	var b strings.Builder
	if obs.lws != nil {
		fmt.Fprintf(&b, "%s/%d", obs.lws.UID, obs.lws.Generation)
	}
	for _, ro := range obs.roles {
		if ro.lws != nil {
			fmt.Fprintf(&b, " %s=%s/%d", ro.name, ro.lws.UID, ro.lws.Generation)
		}
	}
	ms := obs.serving
	return doneMark{uid: ms.UID, generation: ms.Generation, revision: updateRev, workloads: b.String()}
}

// noteDone remembers what the stored status calls done while it calls the serving's rollout of
// this generation and revision done, and says whether it does. The LeaderWorkerSets are taken as
// the first pass that found it done saw them: one changed since (a hand edit the operator undid,
// say) was handed a template, so its groups coming back is no recovery (see doneBefore). So a
// pass of a converged serving compares three fields and stores nothing. An operator started
// afresh learns the mark from the first pass that finds the stored status done.
func (r *Reconciler) noteDone(obs *observed, updateRev string) bool {
	ms := obs.serving
	if !alreadyDone(ms, updateRev) {
		return false
	}
	key := client.ObjectKeyFromObject(ms)
	if v, ok := r.done.Load(key); ok {
		if m := v.(doneMark); m.uid == ms.UID && m.generation == ms.Generation && m.revision == updateRev {
			return true
		}
	}
	r.done.Store(key, doneMarkOf(obs, updateRev))
	return true
}

// doneBefore: the stored status called this very state done before (see noteDone).
func (r *Reconciler) doneBefore(obs *observed, updateRev string) bool {
	v, ok := r.done.Load(client.ObjectKeyFromObject(obs.serving))
	return ok && v.(doneMark) == doneMarkOf(obs, updateRev)
}

// unsettled says why a LeaderWorkerSet's rollout is not done although its pods say so: its
// Service not made yet (watched: the Service's create event, or the Service maker when the create
// fails, brings the next pass), else its leader StatefulSet not done rolling (not watched; read
// only when readLeaderSet); "" when neither.
func (r *Reconciler) unsettled(ctx context.Context, namespace string, svc *corev1.Service, conflict bool, svcName, lwsName string, readLeaderSet bool) (why string, watched bool) {
	if why := serviceUnmade(svc, conflict, svcName); why != "" {
		return why, true
	}
	if !readLeaderSet {
		return "", false
	}
	return r.leaderSetUnsettled(ctx, namespace, lwsName), false
}

// serviceUnmade says that a Service is not made yet, "" when it is (or its name is someone else's:
// the NameConflict is reported instead).
func serviceUnmade(svc *corev1.Service, conflict bool, name string) string {
	if svc != nil || conflict {
		return ""
	}
	return "its Service " + name + " is not made yet"
}

// leaderSetUnsettled reads the leader StatefulSet of a LeaderWorkerSet (it has the LWS's name)
// from the API server and says why it is not done rolling, "" when it is.
func (r *Reconciler) leaderSetUnsettled(ctx context.Context, namespace, name string) string {
	var reader client.Reader = r.Client
	if r.Live != nil {
		reader = r.Live
	}
	sts := &appsv1.StatefulSet{}
	err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, sts)
	switch {
	case apierrors.IsNotFound(err):
		return status.LeaderSetUnsettled(nil, name)
	case apierrors.IsForbidden(err):
		// An install whose roles predate this read: the pods' word is taken, as it was then.
		r.noLeaderSetRead.Do(func() {
			log.FromContext(ctx).Info("Cannot read StatefulSets to confirm a rollout is done; calling it done from the pods alone (reinstall with kubectl llm install to grant the read)",
				"error", err.Error())
		})
		return ""
	case err != nil:
		return "its leader StatefulSet " + name + " could not be read: " + err.Error()
	}
	return status.LeaderSetUnsettled(sts, name)
}

// settling: some LeaderWorkerSet of the summary waits for its leader StatefulSet only, which the
// operator does not watch. A wait for a Service is not: the Service's create event (or the Service
// maker, when the create fails) brings the next pass. Looking every second instead made 19 passes
// per serving in a burst of 1000, whose Services came over 100 s.
func settling(sum status.Summary) bool {
	waits := func(s status.Summary) bool { return s.Settling != "" && !s.SettlingWatched }
	if waits(sum) {
		return true
	}
	for _, rs := range sum.Roles {
		if waits(rs) {
			return true
		}
	}
	return false
}
