package status

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
)

// A rollout is done when every group is ready on the update revision, as the pods show it. The
// pods come from a cache, and the controllers under the LeaderWorkerSet may still have work
// queued that the pods do not show yet: a rollout undone while under way reverts the LWS at
// once, whose controller counts the old pods ready and updated again, while the StatefulSet
// controller has yet to act on the template it was handed in between and will still take a
// group down. So the operator, when it is about to call a rollout done, reads the leader
// StatefulSet fresh from the API server and calls it done only once that has observed its latest
// spec and has every leader pod on its update revision.

// LeaderSetUnsettled says why a leader StatefulSet, as read from the API server, still has work
// to do: its controller has not observed its latest spec, or has leader pods to create, delete
// or replace (not every one of them exists on its update revision). "" when it has none. Readiness
// is the pods' word, not its: its ready count trails the pods by its controller's queue, which
// under a burst of servings is seconds. A missing StatefulSet (nil) is not settled: the groups
// the pods show belong to one being replaced.
func LeaderSetUnsettled(sts *appsv1.StatefulSet, name string) string {
	if sts == nil {
		return fmt.Sprintf("leader StatefulSet %s does not exist", name)
	}
	st := sts.Status
	want := ptrOr(sts.Spec.Replicas, 1)
	switch {
	case st.ObservedGeneration < sts.Generation:
		return fmt.Sprintf("the StatefulSet controller has not yet acted on generation %d of StatefulSet %s (it observed %d)",
			sts.Generation, sts.Name, st.ObservedGeneration)
	case st.Replicas != want || st.UpdatedReplicas != want:
		return fmt.Sprintf("StatefulSet %s has %d of %d leader pods on its update revision, %d in all", sts.Name, st.UpdatedReplicas, want, st.Replicas)
	}
	return ""
}
