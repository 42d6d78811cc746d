package operator

import (
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	lwsac "sigs.k8s.io/lws/client-go/applyconfiguration/leaderworkerset/v1"
)

// builtLWS remembers, per serving, the hash of the LeaderWorkerSet its update revision last
// built to, and what it was built from. Most passes of a running serving (a pod's event, its
// LeaderWorkerSet's status) build the same LeaderWorkerSet again, only to find by its hash that
// the live one already carries it: building and hashing it was the largest part of such a pass's
// CPU (a pod template turned into an apply configuration through JSON, twice, then the whole of
// it marshalled for the hash). With the inputs unchanged and the live LeaderWorkerSet carrying
// the hash they built to, a pass builds nothing; applyLWS builds it after all when it must
// write (someone else changed the LeaderWorkerSet's spec).
type builtLWS struct {
	m sync.Map // types.NamespacedName (the serving) -> builtEntry
}

// lwsKey is everything DesiredLeaderWorkerSet reads: the serving (its UID for the owner, its
// generation for its spec, its pod annotations), the revision the template carries (its name is
// its spec's hash) and the group count.
type lwsKey struct {
	uid            types.UID
	generation     int64
	podAnnotations string
	revision       string
	replicas       int32
}

type builtEntry struct {
	key  lwsKey
	hash string
}

func keyOf(in LWSInput) lwsKey {
	ms := in.Serving
	k := lwsKey{uid: ms.UID, generation: ms.Generation, revision: in.Revision, replicas: in.Replicas}
	pa := podAnnotations(ms)
	for _, name := range slices.Sorted(maps.Keys(pa)) {
		k.podAnnotations += name + "=" + pa[name] + "\n"
	}
	return k
}

// build returns the LeaderWorkerSet in makes and its IntentHash. When b remembers the hash of
// these very inputs and live carries it, it returns only the hash: the apply configuration is
// nil, nothing was built. A nil b always builds and remembers nothing; so does a serving without
// a UID or generation (never one the API server returned).
func (b *builtLWS) build(in LWSInput, live *lwsv1.LeaderWorkerSet) (*lwsac.LeaderWorkerSetApplyConfiguration, string, error) {
	key := keyOf(in)
	name := types.NamespacedName{Namespace: in.Serving.Namespace, Name: in.Serving.Name}
	remember := b != nil && key.uid != "" && key.generation != 0
	if remember && live != nil {
		if e, ok := b.m.Load(name); ok && e.(builtEntry).key == key && live.Annotations[AnnotationAppliedHash] == e.(builtEntry).hash {
			return nil, e.(builtEntry).hash, nil
		}
	}
	lws, err := DesiredLeaderWorkerSet(in)
	if err != nil {
		return nil, "", err
	}
	hash := IntentHash(lws)
	if remember {
		b.m.Store(name, builtEntry{key: key, hash: hash})
	}
	return lws, hash, nil
}

// forget drops what b remembers of a serving that is gone.
func (b *builtLWS) forget(serving types.NamespacedName) {
	if b != nil {
		b.m.Delete(serving)
	}
}
