package operator_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/operator"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

var (
	env *testenv.Env
	// registry holds the metrics of the primary manager.
	registry = prometheus.NewRegistry()
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop, err := startManager(ctx, "primary", registry, primaryRequests.wrap)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start manager:", err)
		os.Exit(1)
	}
	code := m.Run()
	cancel()
	<-stop
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop control plane:", err)
	}
	os.Exit(code)
}

// startManager runs an operator manager (LWS external: envtest has no LWS controller) until ctx ends.
func startManager(ctx context.Context, name string, reg *prometheus.Registry, wrap ...transport.WrapperFunc) (<-chan struct{}, error) {
	cfg := rest.CopyConfig(env.Config)
	for _, w := range wrap {
		cfg.Wrap(w)
	}
	opts := operator.DefaultOptions()
	opts.MetricsAddr, opts.ProbeAddr = "0", "0"
	opts.LeaderElect = false
	opts.LWS = operator.LWSExternal
	opts.Registry = reg
	opts.SkipNameValidation = true
	mgr, err := operator.NewManager(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "manager %s: %v\n", name, err)
		}
	}()
	return done, nil
}

func namespace(t *testing.T) string { return testenv.Namespace(t, env.Client, "op-") }

func serving(ns, name string) *v1.ModelServing {
	return &v1.ModelServing{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.ModelServingSpec{
			Model: "Qwen/Qwen3-0.6B", Replicas: ptr.To[int32](2), GroupSize: 2,
			Resources: v1.ResourceSpec{GPUs: ptr.To[int32](1)},
		},
	}
}

func getLWS(ctx context.Context, ns, name string) (*lwsv1.LeaderWorkerSet, error) {
	lws := &lwsv1.LeaderWorkerSet{}
	err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, lws)
	return lws, err
}

func waitLWS(t *testing.T, ns, name string, cond func(*lwsv1.LeaderWorkerSet) bool) *lwsv1.LeaderWorkerSet {
	t.Helper()
	var got *lwsv1.LeaderWorkerSet
	testenv.Eventually(t, 20*time.Second, "LeaderWorkerSet "+name, func() (bool, error) {
		lws, err := getLWS(context.Background(), ns, name)
		if err != nil {
			return false, err
		}
		got = lws
		return cond(lws), nil
	})
	return got
}

func waitServing(t *testing.T, ns, name, what string, cond func(*v1.ModelServing) bool) *v1.ModelServing {
	t.Helper()
	var got v1.ModelServing
	testenv.Eventually(t, 20*time.Second, what, func() (bool, error) {
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &got); err != nil {
			return false, err
		}
		return cond(&got), nil
	})
	return &got
}

// waitConverged waits until the operator has converged on the serving: its status observes the
// spec and names the endpoint, and the serving's Service exists. The status does not wait for the
// Service (the service maker creates it beside the pass, and its create event brings the next
// pass), so a test that reads the children must wait for both.
func waitConverged(t *testing.T, ns, name string) *v1.ModelServing {
	t.Helper()
	ms := waitServing(t, ns, name, "convergence", func(ms *v1.ModelServing) bool {
		return ms.Status.ObservedGeneration == ms.Generation && ms.Status.Endpoint != ""
	})
	testenv.Eventually(t, 20*time.Second, "the Service of "+name, func() (bool, error) {
		err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: naming.ServiceName(name)}, &corev1.Service{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	return ms
}

// updateServing re-reads the serving and applies change until the write is not in conflict with
// the operator's own status writes.
func updateServing(t *testing.T, ns, name string, change func(*v1.ModelServing)) *v1.ModelServing {
	t.Helper()
	ms := &v1.ModelServing{}
	testenv.Eventually(t, 10*time.Second, "an update of "+name, func() (bool, error) {
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, ms); err != nil {
			return false, err
		}
		change(ms)
		err := env.Client.Update(context.Background(), ms)
		if err != nil && !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
		return err == nil, err
	})
	return ms
}

func revisionLabel(lws *lwsv1.LeaderWorkerSet) string {
	return lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Labels[v1.LabelRevision]
}

func TestChildrenAreCreatedWithTheRightSpecAndOwner(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ms := serving(ns, "qwen")
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	lws := waitLWS(t, ns, "qwen", func(*lwsv1.LeaderWorkerSet) bool { return true })
	ref := metav1.GetControllerOf(lws)
	if ref == nil || ref.UID != ms.UID || ref.Kind != "ModelServing" {
		t.Fatalf("LWS controller ref = %+v, want ModelServing %s", ref, ms.UID)
	}
	if *lws.Spec.Replicas != 2 || *lws.Spec.LeaderWorkerTemplate.Size != 2 {
		t.Errorf("LWS replicas/size = %d/%d, want 2/2", *lws.Spec.Replicas, *lws.Spec.LeaderWorkerTemplate.Size)
	}
	ru := lws.Spec.RolloutStrategy.RollingUpdateConfiguration
	if ru == nil || ru.MaxSurge.IntValue() != 0 || ru.MaxUnavailable.IntValue() != 1 || ptr.Deref(ru.Partition, -1) != 0 {
		t.Errorf("rolling update config = %+v, want surge 0, unavailable 1, partition 0 set explicitly", ru)
	}
	if lws.Spec.NetworkConfig == nil || *lws.Spec.NetworkConfig.SubdomainPolicy != lwsv1.SubdomainShared {
		t.Errorf("network config = %+v, want Shared", lws.Spec.NetworkConfig)
	}
	svc := &corev1.Service{}
	testenv.Eventually(t, 10*time.Second, "the Service", func() (bool, error) {
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.ServiceName("qwen")}, svc)
		return err == nil, err
	})
	if r := metav1.GetControllerOf(svc); r == nil || r.UID != ms.UID || svc.Spec.Ports[0].Port != 8000 ||
		svc.Spec.Selector[lwsv1.WorkerIndexLabelKey] != "0" {
		t.Errorf("Service = owner %+v ports %+v selector %v", r, svc.Spec.Ports, svc.Spec.Selector)
	}
	got := waitServing(t, ns, "qwen", "status with observedGeneration", func(ms *v1.ModelServing) bool {
		return ms.Status.ObservedGeneration == ms.Generation && ms.Status.UpdateRevision != ""
	})
	if got.Status.UpdateRevision != revisionLabel(lws) || got.Status.Endpoint != "qwen-api."+ns+".svc:8000" ||
		got.Status.Selector != lwsv1.WorkerIndexLabelKey+"=0,"+v1.LabelName+"=qwen" || got.Status.Phase != v1.PhasePending {
		t.Errorf("status = %+v", got.Status)
	}
	if !controllerutilContains(got.Finalizers, v1.FinalizerChildren) {
		t.Errorf("finalizers = %v, want %s", got.Finalizers, v1.FinalizerChildren)
	}
	revs := &appsv1.ControllerRevisionList{}
	if err := env.Client.List(ctx, revs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(revs.Items) != 1 || revs.Items[0].Name != got.Status.UpdateRevision || revs.Items[0].Revision != 1 {
		t.Errorf("revisions = %d, want one named %s numbered 1", len(revs.Items), got.Status.UpdateRevision)
	}
}

func controllerutilContains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

func TestDeletedChildrenAreRestoredByTheWatchNotATimer(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := env.Client.Create(ctx, serving(ns, "qwen")); err != nil {
		t.Fatal(err)
	}
	old := waitLWS(t, ns, "qwen", func(*lwsv1.LeaderWorkerSet) bool { return true })
	waitServing(t, ns, "qwen", "first status", func(ms *v1.ModelServing) bool { return ms.Status.ObservedGeneration == ms.Generation })

	if err := env.Client.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	// The periodic requeue is 30 s; 5 s can only be met through the watch on owned children.
	took := testenv.Eventually(t, 5*time.Second, "the LWS to come back", func() (bool, error) {
		lws, err := getLWS(ctx, ns, "qwen")
		return err == nil && lws.UID != old.UID, nil
	})
	t.Logf("LeaderWorkerSet restored %s after its deletion", took)

	svc := &corev1.Service{}
	key := types.NamespacedName{Namespace: ns, Name: naming.ServiceName("qwen")}
	if err := env.Client.Get(ctx, key, svc); err != nil {
		t.Fatal(err)
	}
	oldUID := svc.UID
	if err := env.Client.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	took = testenv.Eventually(t, 5*time.Second, "the Service to come back", func() (bool, error) {
		err := env.Client.Get(ctx, key, svc)
		return err == nil && svc.UID != oldUID, nil
	})
	t.Logf("Service restored %s after its deletion", took)
}

func TestASameNameServingNeverKeepsChildrenOfTheOldOne(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	// A LeaderWorkerSet left by an earlier serving "qwen" whose deletion the GC has not finished.
	stale := &lwsv1.LeaderWorkerSet{
		ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1.GroupVersion.String(), Kind: "ModelServing", Name: "qwen", UID: "old-uid", Controller: ptr.To(true),
		}}},
		Spec: lwsv1.LeaderWorkerSetSpec{
			Replicas:             ptr.To[int32](1),
			StartupPolicy:        lwsv1.LeaderCreatedStartupPolicy,
			RolloutStrategy:      lwsv1.RolloutStrategy{Type: lwsv1.RollingUpdateStrategyType},
			LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{Size: ptr.To[int32](1), WorkerTemplate: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "x"}}}}},
		},
	}
	if err := env.Client.Create(ctx, stale); err != nil {
		t.Fatal(err)
	}
	ms := serving(ns, "qwen")
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	lws := waitLWS(t, ns, "qwen", func(l *lwsv1.LeaderWorkerSet) bool { return l.UID != stale.UID })
	if ref := metav1.GetControllerOf(lws); ref == nil || ref.UID != ms.UID {
		t.Fatalf("new LWS owner = %+v, want %s", ref, ms.UID)
	}

	// Delete and recreate through the API: the finalizer removes the children first.
	if err := env.Client.Delete(ctx, ms); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the serving to go", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(ms), &v1.ModelServing{})
		return apierrors.IsNotFound(err), err
	})
	again := serving(ns, "qwen")
	if err := env.Client.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	waitLWS(t, ns, "qwen", func(l *lwsv1.LeaderWorkerSet) bool {
		r := metav1.GetControllerOf(l)
		return r != nil && r.UID == again.UID
	})
	waitServing(t, ns, "qwen", "status", func(ms *v1.ModelServing) bool { return ms.Status.ObservedGeneration == ms.Generation })
	for _, list := range []client.ObjectList{&lwsv1.LeaderWorkerSetList{}, &corev1.ServiceList{}, &appsv1.ControllerRevisionList{}} {
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		items, _ := meta.ExtractList(list)
		for _, it := range items {
			o := it.(client.Object)
			if r := metav1.GetControllerOf(o); r != nil && r.UID != again.UID {
				t.Errorf("%T %s is still owned by %s, not the new serving %s", o, o.GetName(), r.UID, again.UID)
			}
		}
	}
}

// countingClient counts the writes a reconciler makes.
func countingClient(writes *atomic.Int64) client.Client {
	count := func() { writes.Add(1) }
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		panic(err)
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			count()
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			count()
			return c.Update(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			count()
			return c.Patch(ctx, o, p, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, o runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			count()
			return c.Apply(ctx, o, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			count()
			return c.Delete(ctx, o, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			count()
			return c.SubResource(sub).Update(ctx, o, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			count()
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	})
}

// versions reads the resourceVersions of a serving and its children.
func versions(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	objs := map[string]client.Object{
		"ModelServing":    &v1.ModelServing{},
		"LeaderWorkerSet": &lwsv1.LeaderWorkerSet{},
	}
	for kind, o := range objs {
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, o); err != nil {
			t.Fatal(err)
		}
		out[kind] = o.GetResourceVersion()
	}
	svc := &corev1.Service{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.ServiceName(name)}, svc); err != nil {
		t.Fatal(err)
	}
	out["Service"] = svc.ResourceVersion
	revs := &appsv1.ControllerRevisionList{}
	if err := env.Client.List(ctx, revs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, r := range revs.Items {
		out["ControllerRevision/"+r.Name] = r.ResourceVersion
	}
	return out
}

func TestAConvergedServingIsNotWrittenAgain(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := env.Client.Create(ctx, serving(ns, "qwen")); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, ns, "qwen")
	time.Sleep(300 * time.Millisecond) // let the manager's own passes after its status write drain
	before := versions(t, ns, "qwen")

	var writes atomic.Int64
	r := &operator.Reconciler{Client: countingClient(&writes), Scheme: env.Scheme, Clock: clock.RealClock{}}
	const passes = 20
	pass := func(i int) {
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "qwen"}}); err != nil {
			t.Fatalf("pass %d: %v", i, err)
		}
	}
	// A new reconciler (an operator restart) knows nothing it applied: it applies the LWS and the
	// Service once, which the server takes as unchanged (no resourceVersion moves, checked below).
	pass(0)
	if n := writes.Load(); n > 2 {
		t.Errorf("the first pass of a new reconciler made %d writes, want at most the 2 applies of the LWS and Service", n)
	}
	writes.Store(0)
	for i := 1; i < passes; i++ {
		pass(i)
	}
	after := versions(t, ns, "qwen")
	t.Logf("%d further reconcile passes over a converged serving made %d writes", passes-1, writes.Load())
	if writes.Load() != 0 {
		t.Errorf("%d passes over a converged serving made %d writes, want 0", passes-1, writes.Load())
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s resourceVersion moved %s -> %s", k, v, after[k])
		}
	}

	// Those passes built no LeaderWorkerSet (their inputs were the first's; see builtLWS). A hand
	// edit of its spec, which moves its generation and leaves our hash on it, is still undone: the
	// pass builds it after all.
	lws, err := getLWS(ctx, ns, "qwen")
	if err != nil {
		t.Fatal(err)
	}
	edit := client.MergeFrom(lws.DeepCopy())
	lws.Spec.Replicas = ptr.To[int32](5)
	if err := env.Client.Patch(ctx, lws, edit); err != nil {
		t.Fatal(err)
	}
	writes.Store(0)
	pass(passes)
	if writes.Load() == 0 {
		t.Error("the pass after a hand edit of the LeaderWorkerSet's spec wrote nothing")
	}
	waitLWS(t, ns, "qwen", func(l *lwsv1.LeaderWorkerSet) bool { return ptr.Deref(l.Spec.Replicas, 0) == 2 })
}

func TestSpecChangeRollsTheTemplateRecordsARevisionAndPauseHoldsIt(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ms := serving(ns, "qwen")
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	first := waitServing(t, ns, "qwen", "first revision", func(ms *v1.ModelServing) bool { return ms.Status.UpdateRevision != "" })
	rev1 := first.Status.UpdateRevision

	// Pause, then change the image: the LWS keeps revision 1, a revision 2 is recorded.
	updateServing(t, ns, "qwen", func(ms *v1.ModelServing) {
		ms.Spec.Rollout.Paused = true
		ms.Spec.Engine.Image = "vllm/vllm-openai:v0.12.0"
	})
	paused := waitServing(t, ns, "qwen", "paused status", func(ms *v1.ModelServing) bool {
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing)
		return ms.Status.ObservedGeneration == ms.Generation && c != nil && c.Reason == v1.ReasonRolloutPaused
	})
	rev2 := paused.Status.UpdateRevision
	if rev2 == rev1 {
		t.Fatal("a new image did not make a new update revision")
	}
	lws, _ := getLWS(ctx, ns, "qwen")
	if revisionLabel(lws) != rev1 || lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0].Image == "vllm/vllm-openai:v0.12.0" {
		t.Errorf("paused: LWS moved to %s (image %s), want it held on %s", revisionLabel(lws), lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0].Image, rev1)
	}
	cr := &appsv1.ControllerRevision{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: rev2}, cr); err != nil {
		t.Fatalf("revision %s not recorded: %v", rev2, err)
	}
	if cr.Revision != 2 {
		t.Errorf("revision %s numbered %d, want 2", rev2, cr.Revision)
	}

	// Resume: the LWS template moves to revision 2.
	updateServing(t, ns, "qwen", func(ms *v1.ModelServing) { ms.Spec.Rollout.Paused = false })
	lws = waitLWS(t, ns, "qwen", func(l *lwsv1.LeaderWorkerSet) bool { return revisionLabel(l) == rev2 })
	if img := lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0].Image; img != "vllm/vllm-openai:v0.12.0" {
		t.Errorf("resumed LWS image = %s", img)
	}
}

func TestANewRestartIDStampsTheTemplate(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := env.Client.Create(ctx, serving(ns, "qwen")); err != nil {
		t.Fatal(err)
	}
	waitServing(t, ns, "qwen", "first pass", func(ms *v1.ModelServing) bool { return ms.Status.UpdateRevision != "" })
	ms := updateServing(t, ns, "qwen", func(ms *v1.ModelServing) { ms.Spec.Restart = &v1.RestartSpec{ID: "2026-11-29T10:00:00Z"} })
	lws := waitLWS(t, ns, "qwen", func(l *lwsv1.LeaderWorkerSet) bool {
		return l.Spec.LeaderWorkerTemplate.WorkerTemplate.Annotations[v1.AnnotationRestartID] == "2026-11-29T10:00:00Z"
	})
	if lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Annotations[v1.AnnotationRestartID] != "2026-11-29T10:00:00Z" {
		t.Error("the leader template lacks the restart id")
	}
	if revisionLabel(lws) != ms.Status.UpdateRevision {
		t.Error("a restart made a new revision; it must restart the same one")
	}
}

func TestTheFinalizerKeepsTheServingUntilItsChildrenAreGone(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ms := serving(ns, "qwen")
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	lws := waitLWS(t, ns, "qwen", func(*lwsv1.LeaderWorkerSet) bool { return true })
	// Hold the LWS with a finalizer of someone else, as a slow garbage collection would.
	lws.Finalizers = append(lws.Finalizers, "test.kubectl-llm.dev/hold")
	if err := env.Client.Update(ctx, lws); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, ms); err != nil {
		t.Fatal(err)
	}
	waitLWS(t, ns, "qwen", func(l *lwsv1.LeaderWorkerSet) bool { return !l.DeletionTimestamp.IsZero() })
	time.Sleep(time.Second) // long enough for a wrong finalizer to have let go
	held := &v1.ModelServing{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ms), held); err != nil {
		t.Fatalf("the serving went while its LWS remained: %v", err)
	}
	if held.DeletionTimestamp.IsZero() {
		t.Fatal("the serving is not being deleted")
	}
	lws, _ = getLWS(ctx, ns, "qwen")
	lws.Finalizers = nil
	if err := env.Client.Update(ctx, lws); err != nil {
		t.Fatal(err)
	}
	took := testenv.Eventually(t, 10*time.Second, "the serving to go once its children are gone", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(ms), &v1.ModelServing{})
		return apierrors.IsNotFound(err), err
	})
	t.Logf("serving removed %s after its last child", took)
}

func TestASpecTheOperatorCannotServeIsDegradedNamingTheField(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ms := serving(ns, "bad")
	ms.Spec.Template = &runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"serving.kubectl-llm.dev/name":"someone-else"}}}`)}
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	got := waitServing(t, ns, "bad", "Degraded InvalidSpec", func(ms *v1.ModelServing) bool {
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionDegraded)
		return c != nil && c.Reason == v1.ReasonInvalidSpec
	})
	c := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionDegraded)
	if c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "spec.template.metadata.labels[serving.kubectl-llm.dev/name]") {
		t.Errorf("Degraded = %s %q, want True naming spec.template.metadata.labels[…]", c.Status, c.Message)
	}
	if got.Status.Phase != v1.PhaseFailed || got.Status.ObservedGeneration == got.Generation {
		t.Errorf("phase %s observedGeneration %d (generation %d): want Failed and the generation not observed", got.Status.Phase, got.Status.ObservedGeneration, got.Generation)
	}
	if _, err := getLWS(ctx, ns, "bad"); !apierrors.IsNotFound(err) {
		t.Errorf("an LWS was made from a spec that cannot be served (err %v)", err)
	}
	// Not retried in a loop: the status stays as it is.
	rv := got.ResourceVersion
	testenv.Consistently(t, 2*time.Second, "the serving left alone", func() error {
		again := &v1.ModelServing{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ms), again); err != nil {
			return err
		}
		if again.ResourceVersion != rv {
			return fmt.Errorf("the serving kept being written (%s -> %s)", rv, again.ResourceVersion)
		}
		return nil
	})
	// Fixing the spec clears it.
	updateServing(t, ns, "bad", func(ms *v1.ModelServing) { ms.Spec.Template = nil })
	waitServing(t, ns, "bad", "recovery", func(ms *v1.ModelServing) bool {
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionDegraded)
		return ms.Status.ObservedGeneration == ms.Generation && c != nil && c.Status == metav1.ConditionFalse
	})
}

func TestTwoManagersWithoutLeaderElectionDoNotFlap(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ctx2, cancel := context.WithCancel(ctx)
	stop, err := startManager(ctx2, "second", prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); <-stop }()
	if err := env.Client.Create(ctx, serving(ns, "qwen")); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, ns, "qwen")
	time.Sleep(time.Second) // let both managers' first passes finish
	before := versions(t, ns, "qwen")
	testenv.Consistently(t, 3*time.Second, "no flapping between two managers", func() error {
		after := versions(t, ns, "qwen")
		for k, v := range before {
			if after[k] != v {
				return fmt.Errorf("%s resourceVersion moved %s -> %s with two managers and nothing changing", k, v, after[k])
			}
		}
		return nil
	})
}

func TestMetricsReportGroupsPerServing(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := env.Client.Create(ctx, serving(ns, "qwen")); err != nil {
		t.Fatal(err)
	}
	waitServing(t, ns, "qwen", "convergence", func(ms *v1.ModelServing) bool { return ms.Status.ObservedGeneration == ms.Generation })
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch {
			case labels["namespace"] == ns && m.GetGauge() != nil:
				found[f.GetName()] = m.GetGauge().GetValue()
			case f.GetName() == "kubectl_llm_reconcile_duration_seconds":
				found[f.GetName()] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	if found["kubectl_llm_groups_desired"] != 2 || found["kubectl_llm_groups_ready"] != 0 || found["kubectl_llm_reconcile_duration_seconds"] == 0 {
		t.Errorf("metrics = %v, want groups_desired 2, groups_ready 0 and reconcile durations observed", found)
	}
}

func TestRevisionsOfStatefulSetsAreNeitherCountedNorPruned(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	// What the StatefulSet controller records for the leader StatefulSet: our pod labels, no hash label.
	foreign := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "qwen-7d9f8c", Namespace: ns, Labels: map[string]string{v1.LabelName: "qwen"}},
		Data:       runtime.RawExtension{Raw: []byte(`{"spec":{}}`)},
		Revision:   7,
	}
	if err := env.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, serving(ns, "qwen")); err != nil {
		t.Fatal(err)
	}
	ms := waitServing(t, ns, "qwen", "first revision", func(ms *v1.ModelServing) bool { return ms.Status.UpdateRevision != "" })
	cr := &appsv1.ControllerRevision{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: ms.Status.UpdateRevision}, cr); err != nil {
		t.Fatal(err)
	}
	if cr.Revision != 1 {
		t.Errorf("our first revision is numbered %d; the StatefulSet's revision 7 must not count", cr.Revision)
	}
	testenv.Consistently(t, time.Second, "the StatefulSet's revision left alone", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(foreign), &appsv1.ControllerRevision{}); err != nil {
			return fmt.Errorf("the operator touched a StatefulSet's revision: %v", err)
		}
		return nil
	})
}

// More pod-affecting changes than the history limit: the operator keeps exactly the limit of
// ControllerRevisions, the newest ones plus those still in use, and prunes the oldest.
func TestHistoryBeyondTheLimitKeepsTheNewestRevisions(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := env.Client.Create(ctx, serving(ns, "hist")); err != nil {
		t.Fatal(err)
	}
	ms := waitServing(t, ns, "hist", "the first revision", func(ms *v1.ModelServing) bool { return ms.Status.UpdateRevision != "" })
	first := ms.Status.UpdateRevision
	changes := operator.DefaultHistoryLimit + 3
	var last string
	for i := 1; i <= changes; i++ {
		prev := waitServing(t, ns, "hist", "a recorded revision", func(ms *v1.ModelServing) bool { return ms.Status.UpdateRevision != "" }).Status.UpdateRevision
		updateServing(t, ns, "hist", func(ms *v1.ModelServing) { ms.Spec.Engine.Image = fmt.Sprintf("vllm/vllm-openai:v0.%d.0", 20+i) })
		last = waitServing(t, ns, "hist", fmt.Sprintf("revision of change %d", i), func(ms *v1.ModelServing) bool {
			return ms.Status.ObservedGeneration == ms.Generation && ms.Status.UpdateRevision != prev
		}).Status.UpdateRevision
	}
	var revs []appsv1.ControllerRevision
	testenv.Eventually(t, 20*time.Second, "pruning to the history limit", func() (bool, error) {
		list := &appsv1.ControllerRevisionList{}
		if err := env.Client.List(ctx, list, revision.ListOptions(ns, "hist")...); err != nil {
			return false, err
		}
		revs = list.Items
		return len(revs) <= operator.DefaultHistoryLimit, fmt.Errorf("%d revisions", len(revs))
	})
	numbers := map[int64]string{}
	names := map[string]bool{}
	for _, r := range revs {
		numbers[r.Revision] = r.Name
		names[r.Name] = true
	}
	if len(revs) != operator.DefaultHistoryLimit {
		t.Errorf("%d revisions kept after %d changes, want the limit %d", len(revs), changes+1, operator.DefaultHistoryLimit)
	}
	if !names[last] {
		t.Errorf("the update revision %s was pruned", last)
	}
	// The current revision (no group ever became ready here, so the first) is in use and kept;
	// the oldest of the rest go.
	cur := waitServing(t, ns, "hist", "a current revision", func(ms *v1.ModelServing) bool { return true }).Status.CurrentRevision
	if cur != "" && !names[cur] {
		t.Errorf("the current revision %s was pruned", cur)
	}
	newest := int64(changes + 1)
	for n := newest; n > newest-int64(operator.DefaultHistoryLimit)+1; n-- {
		if numbers[n] == "" {
			t.Errorf("revision %d (one of the newest) was pruned; kept %v", n, numbers)
		}
	}
	t.Logf("after %d changes: kept revisions %v (first %s, current %q)", changes, numbers, first, cur)
}

// The progress deadline is reported when it passes, not at the next periodic look: the pass
// requeues itself for the deadline. Nothing else changes here (envtest runs no LWS controller,
// so no group ever appears), so only that requeue can turn Progressing False.
func TestTheProgressDeadlineIsReportedWhenItPasses(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ms := serving(ns, "stuck")
	ms.Spec.Rollout.ProgressDeadline = &metav1.Duration{Duration: 3 * time.Second}
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	first := waitServing(t, ns, "stuck", "a first status", func(ms *v1.ModelServing) bool { return ms.Status.LastProgressTime != nil })
	got := waitServing(t, ns, "stuck", "Progressing False with ProgressDeadlineExceeded", func(ms *v1.ModelServing) bool {
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing)
		return c != nil && c.Reason == v1.ReasonProgressDeadlineExceeded
	})
	c := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionProgressing)
	if c.Status != metav1.ConditionFalse || got.Status.Phase != v1.PhaseDegraded {
		t.Errorf("Progressing = %s, phase %s; want False and Degraded", c.Status, got.Status.Phase)
	}
	if elapsed := c.LastTransitionTime.Sub(first.Status.LastProgressTime.Time); elapsed < 3*time.Second {
		t.Errorf("the deadline was reported %s after the last progress, before the 3s deadline", elapsed)
	}
}
