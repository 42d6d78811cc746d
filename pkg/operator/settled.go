package operator

import (
	"context"
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
func (r *Reconciler) confirmDone(ctx context.Context, obs *observed, in *status.Input, sum status.Summary) status.Summary {
	ms := obs.serving
	if sum.Progress.Reason != v1.ReasonRolloutComplete || alreadyDone(ms, in.UpdateRevision) {
		return sum
	}
	unsettled := false
	if len(in.Roles) == 0 && in.LWS != nil {
		in.Unsettled, in.UnsettledWatched = r.unsettled(ctx, ms.Namespace, obs.service, obs.serviceConflict, naming.ServiceName(ms.Name), in.LWS.Name)
		unsettled = in.Unsettled != ""
	}
	for i := range in.Roles {
		if ri := &in.Roles[i]; ri.LWS != nil {
			ro := obs.role(ri.Name)
			ri.Unsettled, ri.UnsettledWatched = r.unsettled(ctx, ms.Namespace, ro.service, ro.serviceConflict, naming.RoleServiceName(ms.Name, ri.Name), ri.LWS.Name)
			unsettled = unsettled || ri.Unsettled != ""
		}
	}
	if !unsettled {
		return sum
	}
	return status.Summarize(*in)
}

// unsettled says why a LeaderWorkerSet's rollout is not done although its pods say so: its
// Service not made yet (watched: the Service's create event, or the Service maker when the create
// fails, brings the next pass), else its leader StatefulSet not done rolling (not watched); ""
// when neither.
func (r *Reconciler) unsettled(ctx context.Context, namespace string, svc *corev1.Service, conflict bool, svcName, lwsName string) (why string, watched bool) {
	if why := serviceUnmade(svc, conflict, svcName); why != "" {
		return why, true
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
