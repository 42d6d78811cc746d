package operator

import (
	"context"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// unseenChildren remembers, per serving, the children this process made that the caches have not
// yet been found to hold. A deleted serving's finalizer lets it go on what the caches hold when
// nothing is left here for it: a child made just before the deletion, whose creation the caches
// have not seen, is then read from the API server instead (see finalize). A pass drops what the
// caches hold by then, so in a converged cluster nothing is left here.
type unseenChildren struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[childKey]struct{}
}

// made records a child this process created for the serving.
func (u *unseenChildren) made(serving types.NamespacedName, child childKey) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[types.NamespacedName]map[childKey]struct{}{}
	}
	if u.m[serving] == nil {
		u.m[serving] = map[childKey]struct{}{}
	}
	u.m[serving][child] = struct{}{}
}

// drop forgets one child: deleted by this process, or found in the caches.
func (u *unseenChildren) drop(serving types.NamespacedName, child childKey) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m[serving], child)
	if len(u.m[serving]) == 0 {
		delete(u.m, serving)
	}
}

// forget drops what is remembered of a serving that is gone.
func (u *unseenChildren) forget(serving types.NamespacedName) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, serving)
}

// any reports whether a child this process made for the serving is still not in cache; those the
// cache holds now are dropped. A cache that cannot be read counts as not holding it.
func (u *unseenChildren) any(ctx context.Context, serving types.NamespacedName, cache client.Reader) bool {
	u.mu.Lock()
	var pending []childKey
	for child := range u.m[serving] {
		pending = append(pending, child)
	}
	u.mu.Unlock()
	left := false
	for _, child := range pending {
		if cache.Get(ctx, child.name, emptyOf(child.kind)) == nil {
			u.drop(serving, child)
			continue
		}
		left = true
	}
	return left
}

// emptyOf is an empty object of a child's kind, to read into.
func emptyOf(kind string) client.Object {
	switch kind {
	case "LeaderWorkerSet":
		return &lwsv1.LeaderWorkerSet{}
	case "Service":
		return &corev1.Service{}
	default:
		return &appsv1.ControllerRevision{}
	}
}
