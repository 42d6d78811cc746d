package tui

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// Snapshot is what the cluster holds for the view at one moment.
type Snapshot struct {
	// Serving is the watched serving; nil until it exists (or after it was deleted).
	Serving *v1.ModelServing
	Pods    []corev1.Pod
	Events  []corev1.Event // oldest first, at most maxEvents
	// Servings is the namespace's servings, by name (list mode).
	Servings []v1.ModelServing
	// Synced is true once every watch has listed what exists.
	Synced bool
	// Err is the last error of a watch (it retries by itself).
	Err error
}

// maxEvents bounds the events a snapshot carries.
const maxEvents = 20

// source opens streams: one per screen (a serving, or the list of servings). A stream runs
// until it is closed (the model returns its close Cmd) or the source's lifetime ends.
type source interface {
	open(namespace, name string) *stream
}

var streamIDs atomic.Int64

// stream delivers snapshots. Changes only mark it dirty; a snapshot is built when the view asks
// for the next one, so a burst of watch events becomes one snapshot.
type stream struct {
	id     int64
	notify chan struct{} // capacity 1: something changed since the last snapshot
	build  func() Snapshot
	ctx    context.Context
	cancel context.CancelFunc
}

func newStream(ctx context.Context, build func() Snapshot) *stream {
	ctx, cancel := context.WithCancel(ctx)
	return &stream{id: streamIDs.Add(1), notify: make(chan struct{}, 1), build: build, ctx: ctx, cancel: cancel}
}

// changed marks the stream dirty; it never blocks.
func (s *stream) changed() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// snapshotMsg carries a snapshot of stream id.
type snapshotMsg struct {
	stream int64
	snap   Snapshot
}

// close is the Cmd that stops the stream's watches.
func (s *stream) close() tea.Cmd {
	return func() tea.Msg {
		s.cancel()
		return nil
	}
}

// now is the Cmd that delivers a snapshot right away, changed or not.
func (s *stream) now() tea.Cmd {
	return func() tea.Msg { return snapshotMsg{stream: s.id, snap: s.build()} }
}

// next is the Cmd that waits for the stream's next change; the model re-arms it after each one.
func (s *stream) next() tea.Cmd {
	return func() tea.Msg {
		select {
		case <-s.notify:
			return snapshotMsg{stream: s.id, snap: s.build()}
		case <-s.ctx.Done():
			return nil
		}
	}
}

// Snapshots runs watches and delivers their changes to fn as snapshots, at most one per interval,
// until ctx ends. It is the source of RunPlain, and of the view's tests against an API server.
func (s *stream) snapshots(ctx context.Context, interval time.Duration, fn func(Snapshot)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.ctx.Done():
			return
		case <-s.notify:
			fn(s.build())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// watchSource opens streams on informers (a list, then a watch stream, re-listed only when the
// watch expires) through a controller-runtime client.
type watchSource struct {
	client client.WithWatch
	// lifetime ends every stream: the view's run (a source is made per run; models keep no context).
	lifetime context.Context
}

func (w watchSource) open(ns, name string) *stream {
	var (
		mu      sync.Mutex
		lastErr error
	)
	setErr := func(err error) {
		mu.Lock()
		lastErr = err
		mu.Unlock()
	}
	var st *stream
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { setErr(nil); st.changed() },
		UpdateFunc: func(any, any) { setErr(nil); st.changed() },
		DeleteFunc: func(any) { st.changed() },
	}
	var informers []cache.Controller
	quiet := logr.Discard()
	inform := func(obj runtime.Object, list func() client.ObjectList, opts func(*metav1.ListOptions)) cache.Store {
		lw := w.listWatch(ns, list, opts, setErr)
		if _, ok := obj.(*v1.ModelServing); ok {
			lw = w.servingListWatch(ns, opts, setErr)
		}
		store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
			// The reflector logs its retries through klog, to stderr: that would tear the screen.
			// Its errors reach the view through the snapshot instead.
			Logger:        &quiet,
			ListerWatcher: lw,
			ObjectType:    obj,
			Handler:       handler,
		})
		informers = append(informers, ctrl)
		return store
	}
	synced := func() bool {
		for _, c := range informers {
			if !c.HasSynced() {
				return false
			}
		}
		return true
	}
	errOf := func() error {
		mu.Lock()
		defer mu.Unlock()
		return lastErr
	}

	var build func() Snapshot
	if name == "" {
		servings := inform(&v1.ModelServing{}, func() client.ObjectList { return &v1.ModelServingList{} }, nil)
		build = func() Snapshot {
			snap := Snapshot{Synced: synced(), Err: errOf()}
			for _, o := range servings.List() {
				snap.Servings = append(snap.Servings, *o.(*v1.ModelServing))
			}
			sort.Slice(snap.Servings, func(i, j int) bool { return snap.Servings[i].Name < snap.Servings[j].Name })
			return snap
		}
	} else {
		servings := inform(&v1.ModelServing{}, func() client.ObjectList { return &v1.ModelServingList{} },
			func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
			})
		pods := inform(&corev1.Pod{}, func() client.ObjectList { return &corev1.PodList{} },
			func(o *metav1.ListOptions) { o.LabelSelector = naming.PodSelector(name) })
		events := inform(&corev1.Event{}, func() client.ObjectList { return &corev1.EventList{} },
			func(o *metav1.ListOptions) {
				o.FieldSelector = fields.Set{"involvedObject.kind": "ModelServing", "involvedObject.name": name}.String()
			})
		build = func() Snapshot {
			snap := Snapshot{Synced: synced(), Err: errOf()}
			for _, o := range servings.List() {
				snap.Serving = o.(*v1.ModelServing)
			}
			for _, o := range pods.List() {
				snap.Pods = append(snap.Pods, *o.(*corev1.Pod))
			}
			for _, o := range events.List() {
				snap.Events = append(snap.Events, *o.(*corev1.Event))
			}
			if snap.Serving != nil { // not the events of an earlier serving of the same name
				snap.Events = status.EventsOf(snap.Events, name, snap.Serving.UID, nil)
			}
			snap.Events = latestEvents(snap.Events, maxEvents)
			return snap
		}
	}
	st = newStream(w.lifetime, build)
	for _, inf := range informers {
		go inf.RunWithContext(st.ctx)
	}
	// The first snapshot says "nothing yet" (or "not found") once every list is done.
	go func() {
		if cache.WaitForCacheSync(st.ctx.Done(), synced) {
			st.changed()
		}
	}()
	return st
}

func (w watchSource) listWatch(ns string, newList func() client.ObjectList, opts func(*metav1.ListOptions), setErr func(error)) cache.ListerWatcher {
	options := func(o metav1.ListOptions) *client.ListOptions {
		if opts != nil {
			opts(&o)
		}
		return &client.ListOptions{Namespace: ns, Raw: &o}
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list := newList()
			err := w.client.List(ctx, list, options(o))
			if err != nil {
				setErr(err)
			}
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			wi, err := w.client.Watch(ctx, newList(), options(o))
			if err != nil {
				setErr(err)
			}
			return wi, err
		},
	}
}

// PhaseUndecodable is the phase the view shows for a stored serving that does not fit the Go type.
const PhaseUndecodable v1.Phase = "Undecodable"

// servingListWatch lists and watches servings as unstructured objects and decodes each on its own
// (v1.DecodeServing): one that does not decode shows with its metadata and phase Undecodable
// instead of failing the list, and so the view, of every serving.
func (w watchSource) servingListWatch(ns string, opts func(*metav1.ListOptions), setErr func(error)) cache.ListerWatcher {
	newList := func() client.ObjectList {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(v1.GroupVersion.WithKind("ModelServingList"))
		return l
	}
	inner := w.listWatch(ns, newList, opts, setErr).(*cache.ListWatch)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := inner.ListWithContext(ctx, o)
			if err != nil {
				return nil, err
			}
			ul := obj.(*unstructured.UnstructuredList)
			list := &v1.ModelServingList{ListMeta: metav1.ListMeta{ResourceVersion: ul.GetResourceVersion()}}
			for i := range ul.Items {
				list.Items = append(list.Items, *decodeServing(&ul.Items[i]))
			}
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			wi, err := inner.WatchWithContext(ctx, o)
			if err != nil {
				return nil, err
			}
			return watch.Filter(wi, func(e watch.Event) (watch.Event, bool) {
				if u, ok := e.Object.(*unstructured.Unstructured); ok {
					e.Object = decodeServing(u)
				}
				return e, true
			}), nil
		},
	}
}

func decodeServing(u *unstructured.Unstructured) *v1.ModelServing {
	ms, undecodable, _ := v1.DecodeServing(u)
	if undecodable {
		ms.Status.Phase = PhaseUndecodable // only in the view: the operator never writes it
	}
	return ms
}

// latestEvents keeps the n latest events, oldest first.
func latestEvents(events []corev1.Event, n int) []corev1.Event {
	sort.SliceStable(events, func(i, j int) bool {
		ti, tj := status.EventTime(events[i]), status.EventTime(events[j])
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return events[i].Name < events[j].Name
	})
	if len(events) > n {
		events = events[len(events)-n:]
	}
	return events
}
