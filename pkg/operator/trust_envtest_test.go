package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/operator"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// poison is the object of issue 11: stored by the API server, undecodable as a typed template.
func poison(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(), "kind": "ModelServing",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"model": "x", "template": map[string]any{"spec": map[string]any{"containers": int64(5)}}},
	}}
	return u
}

func degraded(ms *v1.ModelServing) *metav1.Condition {
	return meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionDegraded)
}

func degradedWith(reason string) func(*v1.ModelServing) bool {
	return func(ms *v1.ModelServing) bool {
		c := degraded(ms)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason
	}
}

// One serving whose template cannot be decoded is Degraded/InvalidSpec on its own: every other
// serving is listed, watched and reconciled as before, and a manager started with it present
// syncs its caches and serves.
func TestAPoisonTemplateDegradesOnlyItsOwnServing(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := env.Client.Create(ctx, serving(ns, "good")); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, poison(ns, "evil")); err != nil {
		t.Fatalf("the API server refused the poison object (then the test proves nothing): %v", err)
	}
	evil := waitServing(t, ns, "evil", "evil Degraded/InvalidSpec", degradedWith(v1.ReasonInvalidSpec))
	if msg := degraded(evil).Message; !strings.Contains(msg, "spec.template.spec.containers") {
		t.Errorf("Degraded message %q does not name spec.template.spec.containers", msg)
	}
	if evil.Status.Phase != v1.PhaseFailed {
		t.Errorf("evil phase %s, want Failed", evil.Status.Phase)
	}
	if _, err := getLWS(ctx, ns, "evil"); !apierrors.IsNotFound(err) {
		t.Errorf("an LWS was made for the poison serving (err %v)", err)
	}
	// The good serving still follows its spec: a scale reaches its LWS.
	waitLWS(t, ns, "good", func(*lwsv1.LeaderWorkerSet) bool { return true })
	updateServing(t, ns, "good", func(ms *v1.ModelServing) { ms.Spec.Replicas = ptr.To[int32](3) })
	waitLWS(t, ns, "good", func(l *lwsv1.LeaderWorkerSet) bool { return *l.Spec.Replicas == 3 })

	// A manager started now, with the poison object stored, syncs and reconciles a new serving.
	reg := prometheus.NewRegistry()
	ctx2, cancel := context.WithCancel(ctx)
	stop, err := startManager(ctx2, "restarted", reg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); <-stop }()
	if err := env.Client.Create(ctx, serving(ns, "later")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the restarted manager to report the new serving", func() (bool, error) {
		families, err := reg.Gather()
		if err != nil {
			return false, err
		}
		for _, f := range families {
			if f.GetName() != "kubectl_llm_groups_desired" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "namespace" && l.GetValue() == ns {
						return true, nil
					}
				}
			}
		}
		return false, nil
	})
	// Fixing the template clears it.
	updateServing(t, ns, "evil", func(ms *v1.ModelServing) { ms.Spec.Template = nil })
	waitServing(t, ns, "evil", "evil recovered", func(ms *v1.ModelServing) bool {
		c := degraded(ms)
		return ms.Status.ObservedGeneration == ms.Generation && c != nil && c.Status == metav1.ConditionFalse
	})
}

// Objects with a serving's child names that are not its own are left alone and reported as a
// NameConflict: a user's Service, a hand-made LeaderWorkerSet, one controlled by a ModelServing
// of another API group.
func TestChildrenThatAreNotOursAreLeftAloneAndReported(t *testing.T) {
	ctx := context.Background()
	lwsSpec := lwsv1.LeaderWorkerSetSpec{
		Replicas:             ptr.To[int32](1),
		StartupPolicy:        lwsv1.LeaderCreatedStartupPolicy,
		RolloutStrategy:      lwsv1.RolloutStrategy{Type: lwsv1.RollingUpdateStrategyType},
		LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{Size: ptr.To[int32](1), WorkerTemplate: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "mine", Image: "mine"}}}}},
	}
	otherGroup := []metav1.OwnerReference{{APIVersion: "serving.example.com/v1", Kind: "ModelServing", Name: "qwen", UID: "foreign-uid", Controller: ptr.To(true)}}
	cases := []struct {
		name  string
		child func(ns string) client.Object
		kind  string
	}{
		{"a user's own Service named <name>-api", func(ns string) client.Object {
			return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: naming.ServiceName("qwen"), Namespace: ns},
				Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "mine"}, Ports: []corev1.ServicePort{{Port: 80}}}}
		}, "Service"},
		{"a hand-made LeaderWorkerSet named like the serving", func(ns string) client.Object {
			return &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: ns}, Spec: *lwsSpec.DeepCopy()}
		}, "LeaderWorkerSet"},
		{"a LeaderWorkerSet of a ModelServing of another group", func(ns string) client.Object {
			return &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: ns, OwnerReferences: otherGroup}, Spec: *lwsSpec.DeepCopy()}
		}, "LeaderWorkerSet"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			child := tc.child(ns)
			if err := env.Client.Create(ctx, child); err != nil {
				t.Fatal(err)
			}
			before := child.DeepCopyObject().(client.Object)
			if err := env.Client.Create(ctx, serving(ns, "qwen")); err != nil {
				t.Fatal(err)
			}
			got := waitServing(t, ns, "qwen", "Degraded/NameConflict", degradedWith(v1.ReasonNameConflict))
			if msg := degraded(got).Message; !strings.Contains(msg, tc.kind+" "+child.GetName()) {
				t.Errorf("message %q does not name %s %s", msg, tc.kind, child.GetName())
			}
			time.Sleep(time.Second) // long enough for a wrong operator to have deleted or applied
			after := child.DeepCopyObject().(client.Object)
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(child), after); err != nil {
				t.Fatalf("the %s is gone: %v", tc.kind, err)
			}
			if after.GetUID() != before.GetUID() || after.GetResourceVersion() != before.GetResourceVersion() || !after.GetDeletionTimestamp().IsZero() {
				t.Errorf("the %s was touched: uid %s -> %s, resourceVersion %s -> %s, deleting %v", tc.kind,
					before.GetUID(), after.GetUID(), before.GetResourceVersion(), after.GetResourceVersion(), after.GetDeletionTimestamp())
			}
			// Removing the other object lets the serving make its own.
			if err := env.Client.Delete(ctx, after); err != nil {
				t.Fatal(err)
			}
			waitServing(t, ns, "qwen", "the conflict to clear", func(ms *v1.ModelServing) bool {
				c := degraded(ms)
				return c != nil && c.Reason != v1.ReasonNameConflict && ms.Status.ObservedGeneration == ms.Generation
			})
		})
	}
}

// FailedCreate events of the serving's LeaderWorkerSet or StatefulSets (Pod Security, a missing
// PriorityClass…) become the Degraded reason, naming the cause, instead of groups "not created
// yet" forever.
func TestFailedCreateEventsReachTheStatus(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ms := serving(ns, "qwen")
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	waitLWS(t, ns, "qwen", func(*lwsv1.LeaderWorkerSet) bool { return true })
	now := metav1.Now()
	// What the StatefulSet controller records for group 1's workers when Pod Security refuses them.
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "qwen-1.failed", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "StatefulSet", APIVersion: "apps/v1", Name: "qwen-1", Namespace: ns},
		Reason:         "FailedCreate", Type: corev1.EventTypeWarning, FirstTimestamp: now, LastTimestamp: now, Count: 3,
		Message: `create Pod qwen-1-1 in StatefulSet qwen-1 failed error: pods "qwen-1-1" is forbidden: violates PodSecurity "restricted:latest": privileged`,
		Source:  corev1.EventSource{Component: "statefulset-controller"},
	}
	if err := env.Client.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	got := waitServing(t, ns, "qwen", "Degraded/FailedCreate", degradedWith(v1.ReasonFailedCreate))
	if msg := degraded(got).Message; !strings.Contains(msg, "statefulset qwen-1") || !strings.Contains(msg, "violates PodSecurity") {
		t.Errorf("message %q does not name the StatefulSet and the cause", msg)
	}
}

// An apply the API server does not take (a webhook outage, say) is a Degraded/ApplyFailed naming
// the cause.
func TestApplyErrorsReachTheStatus(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	// The status this pass writes is captured as it is written: the running manager, whose applies
	// succeed, reconciles the same serving and would soon write its own.
	var got v1.ModelServing
	failing := interceptor.NewClient(c, interceptor.Funcs{
		// The pass must apply the LWS: it sees none (the running manager made one already).
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if _, ok := o.(*lwsv1.LeaderWorkerSet); ok {
				return apierrors.NewNotFound(lwsv1.GroupVersion.WithResource("leaderworkersets").GroupResource(), key.Name)
			}
			return c.Get(ctx, key, o, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, o runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			return errors.New(`Internal error occurred: failed calling webhook "mleaderworkerset.x-k8s.io": connection refused`)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if sub == "status" {
				// What the write changes: the conditions whole (a merge patch replaces a list).
				data, err := p.Data(o)
				if err != nil {
					return err
				}
				if err := json.Unmarshal(data, &got); err != nil {
					return err
				}
			}
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	})
	ms := serving(ns, "qwen")
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	// Once the running manager has added its finalizer, the failing pass goes straight to the apply.
	waitServing(t, ns, "qwen", "convergence", func(ms *v1.ModelServing) bool { return ms.Status.ObservedGeneration == ms.Generation })
	r := &operator.Reconciler{Client: failing, Scheme: env.Scheme, Clock: clock.RealClock{}}
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "qwen"}}); err == nil {
		t.Fatal("a pass whose apply failed returned no error (it must be retried)")
	}
	c2 := degraded(&got)
	if c2 == nil || c2.Reason != v1.ReasonApplyFailed {
		t.Fatalf("the pass wrote Degraded %+v, want ApplyFailed", c2)
	}
	if msg := degraded(&got).Message; !strings.Contains(msg, "failed calling webhook") || !strings.Contains(msg, "LeaderWorkerSet") {
		t.Errorf("message %q does not name the object and the cause", msg)
	}
}

// A pod anyone may create, claiming a group that cannot exist, changes nothing: the status lists
// the serving's own groups only and the serving still follows its spec.
func TestAPodClaimingAGroupThatCannotExistIsIgnored(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := env.Client.Create(ctx, serving(ns, "qwen")); err != nil {
		t.Fatal(err)
	}
	for i, group := range []string{"1000000000000", "9223372036854775807", "2000"} {
		forged := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("forged-%d", i), Namespace: ns, Labels: map[string]string{
				v1.LabelName: "qwen", lwsv1.GroupIndexLabelKey: group, lwsv1.WorkerIndexLabelKey: "0",
			}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "x"}}},
		}
		if err := env.Client.Create(ctx, forged); err != nil {
			t.Fatal(err)
		}
	}
	updateServing(t, ns, "qwen", func(ms *v1.ModelServing) { ms.Spec.Replicas = ptr.To[int32](3) })
	got := waitServing(t, ns, "qwen", "the scale observed", func(ms *v1.ModelServing) bool {
		return ms.Status.ObservedGeneration == ms.Generation && ms.Status.ReadyGroups == "0/3"
	})
	if len(got.Status.Groups) != 3 {
		t.Errorf("status.groups has %d entries, want the 3 desired groups only", len(got.Status.Groups))
	}
	for _, g := range got.Status.Groups {
		if g.Index < 0 || g.Index > 2 {
			t.Errorf("status.groups shows group %d", g.Index)
		}
	}
}

// servingWithLoadingGroups creates a serving whose 2 groups' pods run, not ready (loading weights
// for a minute), and waits until its status shows both groups and cond holds.
func servingWithLoadingGroups(t *testing.T, ns, name string, cond func(*v1.ModelServing) bool) *v1.ModelServing {
	t.Helper()
	if err := env.Client.Create(context.Background(), serving(ns, name)); err != nil {
		t.Fatal(err)
	}
	for g := range 2 {
		createGroupPods(t, ns, name, g, map[string]string{v1.LabelName: name}, nil, false, time.Now().Add(-time.Minute))
	}
	return waitServing(t, ns, name, "the loading groups in the status", func(ms *v1.ModelServing) bool {
		return ms.Status.ObservedGeneration == ms.Generation && len(ms.Status.Groups) == 2 && cond(ms)
	})
}

// While weights load (pods running, not ready) time passes but nothing changes: the status holds
// no durations, so passes at later times write nothing.
func TestAServingWhosePodsLoadIsNotWrittenEveryPass(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	got := servingWithLoadingGroups(t, ns, "qwen", func(ms *v1.ModelServing) bool { return ms.Status.Groups[1].Since != nil })
	if r := got.Status.Groups[0].Reason; !strings.Contains(r, "loading weights") || strings.Contains(r, " for ") {
		t.Errorf("group 0 reason %q: want the loading reason without its duration", r)
	}
	time.Sleep(300 * time.Millisecond) // let the manager's own passes after its status write drain
	var writes atomic.Int64
	fake := clocktesting.NewFakeClock(time.Now())
	r := &operator.Reconciler{Client: countingClient(&writes), Scheme: env.Scheme, Clock: fake}
	for i := 0; i < 10; i++ {
		fake.Step(15 * time.Second)
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "qwen"}}); err != nil {
			t.Fatalf("pass %d: %v", i, err)
		}
		if i == 0 {
			// A new reconciler applies the LWS and Service once (unchanged on the server); only
			// status writes count from here.
			writes.Store(0)
		}
	}
	t.Logf("10 passes over 150 s of loading pods made %d writes", writes.Load())
	if writes.Load() != 0 {
		t.Errorf("passes over loading pods made %d writes, want 0", writes.Load())
	}
}
