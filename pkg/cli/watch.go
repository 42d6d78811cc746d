package cli

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// watchServings lists the servings of a namespace (all namespaces when ns is "", one serving when
// name is set, through the metadata.name field selector), hands them to onList, then hands every
// change to onEvent until one of them says stop, fails, or ctx ends.
//
// It is client-go's watchtools.UntilWithSync: an informer that resumes a closed watch from the
// last resourceVersion, lists again when that version expired (the changes in between reach
// onEvent, as Modified or Deleted), and retries with backoff while the API server is away. After
// the first list, onEvent also sees each listed serving once as Added: callers that print
// changes skip what they already printed (by resourceVersion). It never polls.
//
// Each object is decoded on its own (through unstructured lists and watches): a serving that does
// not fit the Go type reaches the callbacks as a bad item, never as an error that ends the watch
// for all.
func watchServings(ctx context.Context, c client.WithWatch, ns, name string,
	onList func([]servingItem) (bool, error), onEvent func(watch.EventType, servingItem) (bool, error)) error {
	precondition := func(store cache.Store) (bool, error) {
		objs := store.List()
		items := make([]servingItem, 0, len(objs))
		for _, o := range objs {
			if u, ok := o.(*unstructured.Unstructured); ok {
				items = append(items, decodeServing(u))
			}
		}
		return onList(items)
	}
	condition := func(ev watch.Event) (bool, error) {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			return false, nil
		}
		return onEvent(ev.Type, decodeServing(u))
	}
	return untilWithSync(ctx, c, v1.GroupVersion.WithKind("ModelServingList"), ns, name, precondition, condition)
}

// untilWithSync runs watchtools.UntilWithSync over the objects of listGVK in ns (all namespaces
// when ns is ""; only the object called name when name is set), as unstructured objects.
//
// The informer retries every failed list for ever; a command must not: when the first list fails
// (the API is not installed, RBAC forbids it, the cluster is unreachable) the wait ends with that
// error. Once something was listed, failures are retried with backoff, so a wait survives an API
// server restart. The reflector's retries are not logged: a script's stderr carries only what the
// command says.
func untilWithSync(ctx context.Context, c client.WithWatch, listGVK schema.GroupVersionKind, ns, name string,
	precondition watchtools.PreconditionFunc, condition watchtools.ConditionFunc) error {
	opts := []client.ListOption{}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if name != "" {
		opts = append(opts, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)})
	}
	newList := func() *unstructured.UnstructuredList {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(listGVK)
		return l
	}
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		listed   bool
		firstErr error
	)
	lw := &listThenWatch{ListWatch: cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			l := newList()
			err := c.List(ctx, l, append(opts, &client.ListOptions{Raw: &o})...)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				listed = true
			case !listed && firstErr == nil:
				firstErr = err
				cancel()
			}
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, newList(), append(opts, &client.ListOptions{Raw: &o})...)
		},
	}}
	item := &unstructured.Unstructured{}
	item.SetGroupVersionKind(listGVK.GroupVersion().WithKind(trimList(listGVK.Kind)))
	quiet := klog.NewContext(waitCtx, logr.Discard())
	_, err := watchtools.UntilWithSync(quiet, lw, item, func(store cache.Store) (bool, error) {
		mu.Lock()
		listed = true // the informer synced (through a list, or a watch list)
		mu.Unlock()
		if precondition == nil {
			return false, nil
		}
		return precondition(store)
	}, condition)
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		return firstErr
	}
	if err != nil && ctx.Err() != nil {
		return ctx.Err() // ended from outside (a timeout, a signal): the caller's context says which
	}
	return err
}

// listThenWatch is a ListWatch that starts with a LIST, never with a streaming watch list: the
// reflector retries a failing watch list for ever (an unreachable cluster would hang the
// command), while the first LIST's error is the one untilWithSync reports.
type listThenWatch struct{ cache.ListWatch }

// IsWatchListSemanticsUnSupported turns the reflector's watch list off (client-go's opt-out).
func (*listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

func trimList(kind string) string {
	if n := len(kind) - len("List"); n > 0 && kind[n:] == "List" {
		return kind[:n]
	}
	return kind
}

// waitForObject watches the object that u names (its kind, namespace and name) until done says
// so: done gets the live object, or nil once it does not exist. Like watchServings it is
// watchtools.UntilWithSync, never a poll.
func waitForObject(ctx context.Context, c client.WithWatch, u *unstructured.Unstructured, done func(live *unstructured.Unstructured) bool) error {
	gvk := u.GroupVersionKind()
	precondition := func(store cache.Store) (bool, error) {
		for _, o := range store.List() {
			if live, ok := o.(*unstructured.Unstructured); ok && live.GetName() == u.GetName() {
				return done(live), nil
			}
		}
		return done(nil), nil
	}
	condition := func(ev watch.Event) (bool, error) {
		live, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || live.GetName() != u.GetName() {
			return false, nil
		}
		if ev.Type == watch.Deleted {
			return done(nil), nil
		}
		return done(live), nil
	}
	return untilWithSync(ctx, c, gvk.GroupVersion().WithKind(gvk.Kind+"List"), u.GetNamespace(), u.GetName(), precondition, condition)
}
