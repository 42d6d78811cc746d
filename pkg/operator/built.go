package operator

import (
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	lwsac "sigs.k8s.io/lws/client-go/applyconfiguration/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// builtLWS remembers, per LeaderWorkerSet of a serving (its own, or each role's), the hash the
// update revision's LeaderWorkerSet last built to, and what it was built from. Most passes of a
// running serving (a pod's event, its LeaderWorkerSet's status) build the same LeaderWorkerSet
// again, only to find by its hash that the live one already carries it: building and hashing it
// was the largest part of such a pass's CPU (a pod template turned into an apply configuration
// through JSON, twice, then the whole of it marshalled for the hash). With the inputs unchanged
// and the live LeaderWorkerSet carrying the hash they built to, a pass builds nothing; applyLWS
// builds it after all when it must write (someone else changed the LeaderWorkerSet's spec).
type builtLWS struct {
	m sync.Map // builtName -> builtEntry
}

// builtName names one LeaderWorkerSet of a serving: its own (role "") or one role's.
type builtName struct {
	serving types.NamespacedName
	role    v1.RoleName
}

// lwsKey is everything DesiredLeaderWorkerSet (or DesiredRoleLeaderWorkerSet) reads: the serving
// (its UID for the owner, its generation for its spec, its pod annotations), the revision the
// template carries (its name is its spec's hash), the group count and, for a role, how many of
// its groups the planner has moved to the revision (the partition).
type lwsKey struct {
	uid            types.UID
	generation     int64
	podAnnotations string
	revision       string
	replicas       int32
	updated        int32
}

type builtEntry struct {
	key  lwsKey
	hash string
}

func servingKey(ms *v1.ModelServing, revision string, replicas int32) lwsKey {
	k := lwsKey{uid: ms.UID, generation: ms.Generation, revision: revision, replicas: replicas}
	pa := podAnnotations(ms)
	for _, name := range slices.Sorted(maps.Keys(pa)) {
		k.podAnnotations += name + "=" + pa[name] + "\n"
	}
	return k
}

// build returns the serving's LeaderWorkerSet in makes and its IntentHash. When b remembers the
// hash of these very inputs and live carries it, it returns only the hash: the apply
// configuration is nil, nothing was built. A nil b always builds and remembers nothing; so does
// a serving without a UID or generation (never one the API server returned).
func (b *builtLWS) build(in LWSInput, live *lwsv1.LeaderWorkerSet) (*lwsac.LeaderWorkerSetApplyConfiguration, string, error) {
	return b.buildNamed(builtName{serving: client.ObjectKeyFromObject(in.Serving)}, servingKey(in.Serving, in.Revision, in.Replicas), live,
		func() (*lwsac.LeaderWorkerSetApplyConfiguration, error) { return DesiredLeaderWorkerSet(in) })
}

// buildRole is build for the LeaderWorkerSet of one role of a serving with spec.roles.
func (b *builtLWS) buildRole(in RoleLWSInput, live *lwsv1.LeaderWorkerSet) (*lwsac.LeaderWorkerSetApplyConfiguration, string, error) {
	key := servingKey(in.Serving, in.Revision, in.Target.Replicas)
	key.updated = in.Target.Updated
	return b.buildNamed(builtName{serving: client.ObjectKeyFromObject(in.Serving), role: in.Role}, key, live,
		func() (*lwsac.LeaderWorkerSetApplyConfiguration, error) { return DesiredRoleLeaderWorkerSet(in) })
}

func (b *builtLWS) buildNamed(name builtName, key lwsKey, live *lwsv1.LeaderWorkerSet, construct func() (*lwsac.LeaderWorkerSetApplyConfiguration, error)) (*lwsac.LeaderWorkerSetApplyConfiguration, string, error) {
	remember := b != nil && key.uid != "" && key.generation != 0
	if remember && live != nil {
		if e, ok := b.m.Load(name); ok && e.(builtEntry).key == key && live.Annotations[AnnotationAppliedHash] == e.(builtEntry).hash {
			return nil, e.(builtEntry).hash, nil
		}
	}
	lws, err := construct()
	if err != nil {
		return nil, "", err
	}
	hash := IntentHash(lws)
	if remember {
		b.m.Store(name, builtEntry{key: key, hash: hash})
	}
	return lws, hash, nil
}

// forget drops what b remembers of a serving that is gone: its own LeaderWorkerSet's and its
// roles'.
func (b *builtLWS) forget(serving types.NamespacedName) {
	if b == nil {
		return
	}
	b.m.Delete(builtName{serving: serving})
	for _, role := range v1.RoleNames() {
		b.m.Delete(builtName{serving: serving, role: role})
	}
}
